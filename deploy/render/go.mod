// Module-mode builds (online) use these versions, the ones Debian 12 packages.
// render.sh builds offline in GOPATH mode against /usr/share/gocode instead;
// it still needs this file (Go resolves the /v3 imports below only for code
// in a tree with a go.mod: "minimal module compatibility").
module crl/deploy/render

go 1.19

require (
	github.com/Masterminds/semver/v3 v3.2.0
	github.com/Masterminds/sprig/v3 v3.2.3
	sigs.k8s.io/yaml v1.3.0
)
