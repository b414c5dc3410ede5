module leasekit.dev/publish

go 1.26.0

require (
	github.com/google/go-cmp v0.7.0
	leasekit.dev/dirlife v0.0.0-00010101000000-000000000000
	leasekit.dev/internal/testkit v0.0.0-00010101000000-000000000000
	leasekit.dev/slot v0.0.0-00010101000000-000000000000
	pgregory.net/rapid v1.3.0
)

require (
	golang.org/x/sys v0.50.0 // indirect
	leasekit.dev/lease v0.0.0-00010101000000-000000000000 // indirect
)

replace (
	leasekit.dev/dirlife => ../dirlife
	leasekit.dev/internal/testkit => ../internal/testkit
	leasekit.dev/lease => ../lease
	leasekit.dev/slot => ../slot
)
