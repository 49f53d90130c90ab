"""crl's gRPC messages and stubs (generated from protos/crl, shipped with crl-client)."""
