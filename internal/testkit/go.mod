module leasekit.dev/internal/testkit

go 1.26.0
