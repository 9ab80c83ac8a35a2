"""A generated Google trace bucket (parts, schema.csv, SHA256SUM) served on 127.0.0.1 only,
for the download tests. The server stops when the context ends."""

import contextlib
import functools
import hashlib
import http.server
import threading
from pathlib import Path

from stragglers.traces.generate import GoogleGeneratorConfig, generate_google


def write_google_bucket(source: Path, n_jobs: int = 3, seed: int = 5) -> Path:
    generate_google(source, GoogleGeneratorConfig.from_dict({"n_jobs": n_jobs, "seed": seed}))
    (source / "schema.csv").write_text("file pattern,field number,content,format,mandatory\n")
    lines = [f"{hashlib.sha256((source / 'schema.csv').read_bytes()).hexdigest()} *schema.csv"]
    for path in sorted(source.glob("*/part-*.csv.gz")):
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        lines.append(f"{digest} *{path.relative_to(source).as_posix()}")
    (source / "SHA256SUM").write_text("\n".join(lines) + "\n")
    return source


@contextlib.contextmanager
def served_folder(folder: Path):
    """Serve `folder` over HTTP on 127.0.0.1 (a free port); yields the base URL."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
