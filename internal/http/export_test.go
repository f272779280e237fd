package http

// SetAuditExportPage makes the audit export read n entries at a time until
// the returned func restores the default. Tests of this package do not run
// in parallel.
func SetAuditExportPage(n int) (restore func()) {
	old := auditExportPage
	auditExportPage = n
	return func() { auditExportPage = old }
}
