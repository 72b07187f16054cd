import sys
import types

from llmbench.hardware import device


def _fake_nvml(monkeypatch, count):
    fake = types.SimpleNamespace(nvmlInit=lambda: None, nvmlShutdown=lambda: None,
                                 nvmlDeviceGetCount=lambda: count)
    monkeypatch.setitem(sys.modules, "pynvml", fake)


def test_auto_picks_cuda_when_nvml_sees_a_gpu(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    _fake_nvml(monkeypatch, 2)
    assert device.resolve_device("auto") == "cuda"
    assert device.cuda_device_count() == 2


def test_auto_falls_back_to_cpu(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    _fake_nvml(monkeypatch, 0)
    assert device.resolve_device("auto") == "cpu"


def test_hidden_gpus_count_as_none(monkeypatch):
    _fake_nvml(monkeypatch, 4)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert device.resolve_device("auto") == "cpu"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert device.cuda_device_count() == 1


def test_explicit_device_is_kept():
    assert device.resolve_device("cuda:1") == "cuda:1"
    assert device.resolve_device("cpu") == "cpu"


def test_a_local_server_computes_on_this_machines_gpus_whatever_this_process_may_see(monkeypatch):
    _fake_nvml(monkeypatch, 2)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # hides GPUs from us, not from the server
    assert device.server_device("http://127.0.0.1:8000") == "cuda"
    assert device.server_device("http://localhost:8000/v1") == "cuda"
    assert device.server_device("http://[::1]:8000") == "cuda"
    _fake_nvml(monkeypatch, 0)
    assert device.server_device("http://127.0.0.1:8000") == "cpu"


def test_a_remote_server_computes_somewhere_unknown(monkeypatch):
    _fake_nvml(monkeypatch, 2)
    assert device.server_device("http://10.0.0.7:8000") == "unknown"
    assert device.server_device("http://gpu-box:8000") == "unknown"
