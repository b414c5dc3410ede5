module leasekit.dev/dirlife

go 1.26.0

require golang.org/x/sys v0.50.0

require pgregory.net/rapid v1.3.0

require leasekit.dev/internal/testkit v0.0.0-00010101000000-000000000000

replace leasekit.dev/internal/testkit => ../internal/testkit
