package kernel_test

import "leasekit.dev/platform/internal/moduletest"

// The module fixtures, by the short names the kernel's tests use.
const (
	webPath, dbPath, batchPath = moduletest.WebPath, moduletest.DBPath, moduletest.BatchPath
	instanceModule             = moduletest.InstanceModule
)

var (
	acme           = moduletest.Acme
	build          = moduletest.Build
	writeModule    = moduletest.WriteModule
	generated      = moduletest.Generated
	instance       = moduletest.Instance
	shop           = moduletest.Shop
	platformModule = moduletest.PlatformModule
)
