module leasekit.dev/platform

go 1.26.0

require (
	cuelang.org/go v0.17.1
	github.com/hashicorp/golang-lru/v2 v2.0.7
	go.uber.org/goleak v1.3.0
	golang.org/x/sync v0.23.0
	leasekit.dev/dirlife v0.0.0-00010101000000-000000000000
	leasekit.dev/internal/testkit v0.0.0-00010101000000-000000000000
	leasekit.dev/lease v0.0.0-00010101000000-000000000000
	leasekit.dev/publish v0.0.0-00010101000000-000000000000
	leasekit.dev/slot v0.0.0-00010101000000-000000000000
	pgregory.net/rapid v1.3.0
)

require (
	cuelabs.dev/go/oci/ociregistry v0.0.0-20260601085548-328ff8e2c943 // indirect
	github.com/emicklei/proto v1.14.3 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/mitchellh/go-wordwrap v1.0.1 // indirect
	github.com/opencontainers/go-digest v1.0.0 // indirect
	github.com/opencontainers/image-spec v1.1.1 // indirect
	github.com/pelletier/go-toml/v2 v2.3.1 // indirect
	github.com/protocolbuffers/txtpbfmt v0.0.0-20260420112717-c39628bde8b5 // indirect
	github.com/rogpeppe/go-internal v1.15.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/net v0.59.0 // indirect
	golang.org/x/oauth2 v0.37.0 // indirect
	golang.org/x/text v0.42.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

require (
	github.com/cockroachdb/apd/v3 v3.2.3 // indirect
	golang.org/x/mod v0.41.0
	golang.org/x/sys v0.50.0 // indirect
)

replace (
	leasekit.dev/dirlife => ../dirlife
	leasekit.dev/internal/testkit => ../internal/testkit
	leasekit.dev/lease => ../lease
	leasekit.dev/publish => ../publish
	leasekit.dev/slot => ../slot
)
