"""A local fleet of official Kubernetes control planes on loopback (``pincompile fleet``).

One etcd, one *host* control plane and one control plane per ``Cluster`` spec, each with
kube-apiserver, kube-controller-manager, kube-scheduler and a kwok process that fakes the
cluster's nodes. Binaries come from ``hack/fleet/go.mod`` and are cached outside the repo.
"""
