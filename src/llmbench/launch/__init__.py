"""How a point runs: in-process (runner.run_sweep), in isolated worker processes
(isolated.py, the default), or as Ray tasks on many machines (ray_executor.py)."""
