// Package kubernetes holds example Kubernetes manifests for running
// `monty serve` (deployment.yaml, service.yaml, pdb.yaml, hpa.yaml,
// redis.yaml, secret.example.yaml, kustomization.yaml) and a test that
// validates them without a cluster: every document is decoded strictly
// into the official API type of its apiVersion and kind, and the settings
// that must agree across files (probes, drain timing, Secrets, the Redis
// store's address, selectors, the security context) are checked.
//
// It is a module of its own, so that the main module does not depend on
// the Kubernetes API packages. Run the test with:
//
//	cd examples/kubernetes && go test ./...
//
// docs/deploy.md explains the deployment.
package kubernetes
