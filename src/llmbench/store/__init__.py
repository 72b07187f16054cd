from llmbench.store.record import MetricStats, Record, new_run_id
from llmbench.store.store import Store

__all__ = ["MetricStats", "Record", "Store", "new_run_id"]
