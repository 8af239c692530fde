"""API clients of the reconciler, split by verb (in the manner of kopf's clients).

``connect`` opens one client per kubeconfig context with the request hook that counts,
rate-limits and retries every request in one place; ``read`` lists and gets; ``write``
applies, deletes and patches status; ``events`` records Kubernetes Events.
"""
