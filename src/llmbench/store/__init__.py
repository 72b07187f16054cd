from llmbench.store.record import Record, new_run_id
from llmbench.store.store import Store

__all__ = ["Record", "Store", "new_run_id"]
