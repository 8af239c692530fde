"""A local fleet of official Kubernetes control planes on loopback (``pincompile fleet``).

One etcd, one *host* control plane and one control plane per ``Cluster`` spec, each with
kube-apiserver, kube-controller-manager, kube-scheduler and a kwok process that fakes the
cluster's nodes; member clusters add metrics-server and, with the ``kubeflow-training``
addon, the Kubeflow training operator. Binaries come from the Go modules under ``hack/``
and are cached outside the repo (:mod:`.build`). :mod:`.fleet` brings a fleet up and down
(its state: :mod:`.state`; the components' command lines: :mod:`.components`; the
kubeconfigs: :mod:`.kubeconfig`; its timers: :mod:`.profiles`); :mod:`.control` stops and
starts one component of a running fleet on purpose. What ``kubectl logs`` and ``kubectl
exec`` reach: :mod:`.debugging` (the pod agent, :mod:`.pod_agent`, runs the nodes' kubelet
front, :mod:`.kubelet_front`, and each pod's log, :mod:`.pod_logs`; an exec session's
processes: :mod:`.sessions`, and kwok's :mod:`.reaper`).
"""
