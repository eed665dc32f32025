"""A folder of ``.txt`` files (``.txt.gz`` too), one document each, its id the relative path."""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

from ..errors import InputError
from ..records import Document
from .base import SURROGATE, DocumentFormat, FieldMap, is_txt, read_text, walk_files

def read_folder_documents(folder: Path, mapping: FieldMap = FieldMap()) -> Iterator[Document]:
    if not mapping.default:
        raise InputError("a folder of .txt files has no fields to map: one file is one document's text", folder)
    if not folder.is_dir():
        raise InputError("format 'folder' needs a folder of .txt files", folder)
    for file in walk_files(folder, is_txt):
        doc_id = file.relative_to(folder).as_posix()
        if SURROGATE.search(doc_id):
            raise InputError("the file name is not valid UTF-8", file)
        yield Document(id=doc_id, text=read_text(file))


DOCUMENTS = DocumentFormat(read_folder_documents, "a folder of .txt files (.txt.gz too), one document each, its id the "
                           "relative path", folder=True, file=False, text_fields=False,
                           count=lambda source, named: sum(1 for _ in walk_files(source, is_txt)))
