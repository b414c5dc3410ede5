module leasekit.dev/internal

go 1.26.0

require (
	leasekit.dev/dirlife v0.0.0-00010101000000-000000000000
	leasekit.dev/lease v0.0.0-00010101000000-000000000000
	leasekit.dev/slot v0.0.0-00010101000000-000000000000
)

require golang.org/x/sys v0.50.0 // indirect

replace (
	leasekit.dev/dirlife => ../dirlife
	leasekit.dev/lease => ../lease
	leasekit.dev/slot => ../slot
)
