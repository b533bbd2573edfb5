// Package nodeapi is the agent's authenticated API: what a workstation
// reads from a node (its kernel state, the agent's report) and the repairs
// it may ask for, each authorised by the API server.
//
// The CLI connects to the agent on the node's address over TLS, and pins
// the certificate whose SHA-256 the agent published on its own Pod. The
// agent authenticates the caller as kubelet does: a client certificate
// signed by the cluster's client CA, or a bearer token checked with a
// TokenReview. It then asks the API server, with a SubjectAccessReview,
// whether the caller may use the virtual subresource nodes/svctrace of the
// node: "get" to read, "update" to repair. Reading therefore never needs
// pods/exec, and a role that reads cannot write.
package nodeapi
