"""Health of live Kubernetes objects, one rule per kind, in the manner of Argo CD's health
checks, and the worst-wins health of an app.

``health_of(obj)`` judges one object (None for kinds without a rule); ``assess(obj)`` also
covers absent objects (Missing) and rule-less kinds (Healthy); ``aggregate(items)`` folds
many into one, naming the worst object; ``summary(health)`` renders one line.
Rules live one per module (``deployment``, ``pod``, ``job``, ...) and are registered in
``rules.RULES``.
"""

from reconciler.health.aggregate import ORDER, Item, aggregate, rank, summary, where
from reconciler.health.rules import RULES, assess, has_rule, health_of

__all__ = ["ORDER", "RULES", "Item", "aggregate", "assess", "has_rule", "health_of", "rank",
           "summary", "where"]
