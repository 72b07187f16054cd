from __future__ import annotations

import typer
from rich.table import Table

from llmbench.cli.common import console, out

models_app = typer.Typer(help="The model catalog, and model files prepared for each engine.",
                         no_args_is_help=False, invoke_without_command=True)


def register(app: typer.Typer) -> None:
    app.add_typer(models_app, name="models")


@models_app.callback()
def models(ctx: typer.Context) -> None:
    """List the catalog (bundled real weights and synthetic random-weight architectures)."""
    if ctx.invoked_subcommand is not None:
        return
    from llmbench.models.catalog import CATALOG

    t = Table()
    for c in ("name", "source", "params", "layers", "hidden", "heads", "kv heads", "ffn", "vocab"):
        t.add_column(c)
    for a in CATALOG.values():
        t.add_row(a.name, "bundled" if a.bundled else "synthetic", f"{a.param_count() / 1e9:.3f}B",
                  str(a.layers), str(a.hidden), str(a.heads), str(a.kv_heads), str(a.ffn), str(a.vocab))
    out.print(t)
    from llmbench.models.sources import TINY_VLMS

    out.print("tiny vision-language models (random weights, made on first use; `--shape images`): "
              + ", ".join(TINY_VLMS), highlight=False)


@models_app.command("path")
def path(name: str, format: str = typer.Option("gguf", "--format", help="gguf | hf"),
         gguf_type: str = typer.Option(None, "--gguf-type",
                                       help="f16 | q8_0 | q4_0: weight type of a synthetic "
                                            "model's random-weight GGUF (default f16)")) -> None:
    """Print (preparing it if needed, cached outside the repository) the path of NAME's files.

    A synthetic (catalog) model in GGUF is written once with random weights: F16 at disk speed,
    Q8_0 / Q4_0 by llama.cpp's own quantiser from the F16 file.
    """
    from llmbench.errors import SpecError
    from llmbench.models.gguf_synth import GGUF_TYPES
    from llmbench.models.sources import model_path

    if format not in ("gguf", "hf"):
        raise SpecError([("--format", f"{format!r} is not one of gguf, hf")])
    if gguf_type is not None and gguf_type not in GGUF_TYPES:
        raise SpecError([("--gguf-type", f"{gguf_type!r} is not one of {', '.join(GGUF_TYPES)}")])
    _say_if_writing(name, format, gguf_type)
    print(model_path(name, format, gguf_type=gguf_type))


def _say_if_writing(name: str, format: str, gguf_type: str | None) -> None:
    """A random-weight GGUF of a large model takes a while (disk speed): say so on stderr."""
    from llmbench.models.gguf_synth import cached_path
    from llmbench.models.sources import resolve

    ref = resolve(name)
    if format != "gguf" or ref.source != "synthetic":
        return
    path = cached_path(ref.arch, gguf_type or "f16")
    if not path.is_file():
        how = "quantising with llama.cpp" if gguf_type not in (None, "f16") else "writing"
        console.print(f"{how} {path.name} (random weights, {ref.arch.param_count() / 1e9:.2f}B "
                  "parameters) ...")
