import subprocess
import sys


def test_import_llmbench_imports_no_engine():
    code = ("import sys, llmbench, llmbench.cli; llmbench.cli.app; import llmbench.kinds.inference.kind, llmbench.kinds.inference.spec, llmbench.store; "
            "heavy = [m for m in ('torch', 'vllm', 'llama_cpp', 'transformers') if m in sys.modules]; "
            "print(heavy); sys.exit(1 if heavy else 0)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
