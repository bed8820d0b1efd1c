"""Objects as files under one directory: written to a temporary name, flushed to disk and
renamed into place, so a crash never leaves half an object under a real key."""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from perdure.core.errors import ConfigError, InvalidInputError
from perdure.store.objects.base import ObjectStoreError, ObjectUnreadableError, StoredObject

_TMP = ".tmp-"


class LocalObjects:
    """An :class:`~perdure.store.objects.ObjectStore` in a directory (created on first write)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.url = f"file://{root.resolve()}"

    def _path(self, key: str) -> Path:
        parts = key.split("/")
        if not key or any(p in ("", ".", "..") or p.startswith(_TMP) for p in parts):
            raise InvalidInputError(f"object key {key!r} is not a relative path")
        return self.root.joinpath(*parts)

    def put(self, key: str, data: bytes | Path) -> None:
        """See :meth:`ObjectStore.put`."""
        path = self._path(key)
        tmp = path.with_name(f"{_TMP}{secrets.token_hex(6)}-{path.name}")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(tmp, "wb") as out:
                if isinstance(data, Path):
                    import shutil  # loaded by the first file put, not by every process

                    with open(data, "rb") as src:
                        shutil.copyfileobj(src, out, 1 << 20)
                else:
                    out.write(data)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, path)
            _fsync_dir(path.parent)
        except OSError as exc:
            with contextlib.suppress(OSError):  # the folder may be what failed
                tmp.unlink(missing_ok=True)
            raise ObjectStoreError(
                f"cannot write artifact {key} under {self.root}: {exc.strerror or exc}",
                fix="check that the artifact directory is writable and has space",
            ) from exc

    def get(self, key: str) -> bytes | None:
        """See :meth:`ObjectStore.get`."""
        try:
            return self._path(key).read_bytes()
        except FileNotFoundError:
            return None
        except (IsADirectoryError, NotADirectoryError, PermissionError) as exc:
            raise ObjectUnreadableError(
                f"artifact {key} under {self.root} cannot be read: {exc.strerror or exc}"
            ) from exc
        except OSError as exc:
            raise ObjectStoreError(f"cannot read artifact {key}: {exc.strerror or exc}") from exc

    def delete(self, key: str) -> None:
        """See :meth:`ObjectStore.delete`."""
        try:
            self._path(key).unlink(missing_ok=True)
        except OSError as exc:
            raise ObjectStoreError(f"cannot delete artifact {key}: {exc.strerror or exc}") from exc

    def list(self, prefix: str = "") -> Iterator[StoredObject]:
        """See :meth:`ObjectStore.list` (temporary files of unfinished writes are skipped)."""
        if not self.root.exists():
            return
        if not self.root.is_dir():
            raise ConfigError(f"artifact store {self.root} is not a directory")
        for dirpath, _dirs, files in os.walk(self.root):
            for name in files:
                if name.startswith(_TMP):
                    continue
                full = Path(dirpath) / name
                key = full.relative_to(self.root).as_posix()
                if not key.startswith(prefix):
                    continue
                try:
                    st = full.stat()
                except FileNotFoundError:
                    continue
                yield StoredObject(key, st.st_size, datetime.fromtimestamp(st.st_mtime, UTC))


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
