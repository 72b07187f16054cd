"""How points run, for every kind of point (launch/kind.py): the pipeline (pipeline.py) runs
groups in-process, in isolated worker processes (isolated.py + worker.py, the default; torchrun
for N-process training points) or as Ray tasks on many machines (ray_executor.py)."""
