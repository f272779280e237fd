export function SettingsPage(_: { focusServer?: string; focusTool?: string }) {
  return <p>Settings</p>;
}
