export function ChatPage(_: { conversationId?: string }) {
  return <p>Chat</p>;
}
