# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one text codec of the files this collection edits: UTF-8 with ``surrogateescape``, so
that bytes that are not UTF-8 decode to text that encodes back to the very same bytes (lines we
do not own stay byte for byte); and how a place in a text is named (``path:line:col``)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type


def decode_bytes(data):
    """File bytes -> text that encodes back to the same bytes (invalid UTF-8 included);
    None stays None (a missing file)."""
    return None if data is None else data.decode('utf-8', 'surrogateescape')


def encode_text(text):
    return text.encode('utf-8', 'surrogateescape')


def line_col(text, pos):
    """1-based (line, column) of character offset ``pos`` in ``text``."""
    line = text.count('\n', 0, pos) + 1
    col = pos - (text.rfind('\n', 0, pos) + 1) + 1
    return line, col


def place(path, text, pos):
    """``path:line:col`` of character offset ``pos`` in ``text`` (the file at ``path``)."""
    return '%s:%d:%d' % ((path,) + line_col(text, pos))
