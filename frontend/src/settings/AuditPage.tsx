export function AuditPage() {
  return <p>Audit</p>;
}
