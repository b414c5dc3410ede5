module leasekit.dev/slot

go 1.26.0

require (
	github.com/anishathalye/porcupine v1.3.1
	leasekit.dev/lease v0.0.0-00010101000000-000000000000
	pgregory.net/rapid v1.3.0
)

replace leasekit.dev/lease => ../lease
