# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""systemd_bus: the D-Bus wire format against real systemd replies (systemd_bus_data/, captured
from systemd 252 on a lab node), the messages it sends read back by the same rules, and the
connection against a server on a real Unix socket that speaks the handshake as sd-bus does.
The molecule systemd scenario compares it with systemctl on Debian 11, 12 and 13."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import json
import os
import socket
import struct
import threading

import pytest

import conftest  # noqa: F401 pylint: disable=unused-import

from ansible_collections.gpufleet.tuning.plugins.module_utils import systemd_bus as bus
from ansible_collections.gpufleet.tuning.plugins.module_utils import systemd_live as sdlive

DATA = os.path.join(os.path.dirname(__file__), 'systemd_bus_data', 'replies-252.json')
with open(DATA) as _handle:
    REPLIES = dict((key, base64.b64decode(value)) for key, value in json.load(_handle).items()
                   if not key.startswith('_'))


def test_split_signature():
    assert bus.split_signature('a{sv}as(ssou)vt') == ['a{sv}', 'as', '(ssou)', 'v', 't']
    assert bus.split_signature('a(sasbttttuii)') == ['a(sasbttttuii)']
    assert bus.split_signature('') == []
    for bad in ('a', '(ss', 'a{sv', 'z'):
        with pytest.raises(bus.BusError):
            bus.split_signature(bad)


def test_a_real_get_reply():
    kind, fields, values = bus.parse_message(REPLIES['get_version'])
    assert kind == 2 and fields[5] == 1 and fields[8] == 'v'
    assert values == ['252.39-1~deb12u2']


def test_a_real_getall_reply_of_a_user_manager():
    kind, fields, values = bus.parse_message(REPLIES['getall_user'])
    assert kind == 2 and fields[8] == 'a{sv}'
    props = values[0]
    assert props['Version'] == '252.39-1~deb12u2'
    assert props['DefaultLimitNOFILE'] == 16384 and props['DefaultLimitNOFILESoft'] == 16384
    assert props['DefaultLimitCORE'] == bus.UINT64_MAX and props['DefaultLimitCORESoft'] == 0
    assert 'USER=trainer' in props['Environment']
    assert len(props) > 80
    # what systemctl --user show printed on that node for the same manager
    assert bus.show_value(props['DefaultLimitCORE']) == 'infinity'
    assert bus.show_value(props['DefaultLimitCORESoft']) == '0'
    names = sdlive.show_properties(['nofile', 'core'], 'DefaultLimit')
    shown = dict((name, bus.show_value(props[name])) for name in names)
    assert sdlive.live_limits(shown, 'DefaultLimit', ['nofile', 'core']) == {
        'nofile': sdlive.model.Limit(16384, 16384), 'core': sdlive.model.Limit(0, 'unlimited')}


def test_a_real_list_units_reply():
    _kind, fields, values = bus.parse_message(REPLIES['list_user_managers'])
    assert fields[8] == 'a(ssssssouso)'
    assert [(unit[0], unit[2], unit[3], unit[4]) for unit in values[0]] == [
        ('user@1001.service', 'loaded', 'active', 'running')]


def test_a_real_error_reply():
    kind, fields, values = bus.parse_message(REPLIES['error_no_method'])
    assert kind == 3 and fields[4] == 'org.freedesktop.DBus.Error.UnknownMethod'
    assert 'NoSuchMethod' in values[0]


def test_a_method_call_reads_back_as_sent():
    data = bus.method_call(7, bus.OBJECT, bus.MANAGER, 'ListUnitsByPatterns', 'asas',
                           [['running'], ['user@*.service', 'x']])
    assert data[:4] == b'l\x01\x00\x01' and len(data) == bus.message_length(data[:16])
    kind, fields, values = bus.parse_message(data)
    assert kind == 1
    assert fields == {1: bus.OBJECT, 2: bus.MANAGER, 3: 'ListUnitsByPatterns',
                      6: bus.DESTINATION, 8: 'asas'}
    assert values == [['running'], ['user@*.service', 'x']]
    assert struct.unpack('<I', data[8:12])[0] == 7
    # the header (16 bytes and the fields) is padded to 8 before the body
    fields_length = struct.unpack('<I', data[12:16])[0]
    assert (len(data) - struct.unpack('<I', data[4:8])[0]) % 8 == 0
    assert len(data) - struct.unpack('<I', data[4:8])[0] >= 16 + fields_length


def test_a_big_endian_message_is_read():
    body = b'\x00\x00\x00\x03abc\x00'
    fields = (b'\x05\x01u\x00\x00\x00\x00\x09' + b'\x00' * 0 + b'\x08\x01g\x00\x01s\x00')
    # field 5 (reply serial, u) is 8 bytes; field 8 starts 8-aligned at 24
    head = b'B\x02\x00\x01' + struct.pack('>II', len(body), 1) + struct.pack('>I', len(fields))
    data = head + fields + b'\x00' * (-(len(head) + len(fields)) % 8) + body
    kind, parsed, values = bus.parse_message(data)
    assert (kind, parsed[5], values) == (2, 9, ['abc'])


@pytest.mark.parametrize('damage', ['truncate', 'length', 'magic'])
def test_a_malformed_message_is_a_bus_error(damage):
    data = REPLIES['getall_user']
    if damage == 'truncate':
        data = data[:len(data) // 2]
    elif damage == 'length':
        data = data[:4] + struct.pack('<I', 10) + data[8:]
    else:
        data = b'X' + data[1:]
    with pytest.raises(bus.BusError):
        bus.parse_message(data)


class FakeManager(threading.Thread):
    """A Unix socket server that authenticates as sd-bus does and answers one call with a
    recorded systemd reply (its reply serial rewritten to the call's)."""

    def __init__(self, path, reply, auth_answer=b'OK 0123456789abcdef0123456789abcdef\r\n',
                 garbage_first=False):
        threading.Thread.__init__(self)
        self.daemon = True
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(path)
        self.server.listen(1)
        self.reply, self.auth_answer, self.garbage_first = reply, auth_answer, garbage_first
        self.received = b''

    def run(self):
        conn, _address = self.server.accept()
        with conn:
            while b'BEGIN\r\n' not in self.received:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                self.received += chunk
            conn.sendall(self.auth_answer)
            if not self.auth_answer.startswith(b'OK'):
                return
            call = self.received.split(b'BEGIN\r\n', 1)[1]
            while len(call) < 16 or len(call) < bus.message_length(call[:16]):
                call += conn.recv(4096)
            serial = struct.unpack('<I', call[8:12])[0]
            if self.garbage_first:
                conn.sendall(self._with_serial(self.reply, serial + 100))
            conn.sendall(self._with_serial(self.reply, serial))

    @staticmethod
    def _with_serial(reply, serial):
        # field 5 (reply serial) is the first header field of these replies: bytes 16..24
        assert reply[16:20] == b'\x05\x01u\x00'
        return reply[:20] + struct.pack('<I', serial) + reply[24:]


def test_a_connection_authenticates_calls_and_skips_other_replies(tmp_path):
    path = str(tmp_path / 'private')
    server = FakeManager(path, REPLIES['get_version'], garbage_first=True)
    server.start()
    with bus.Connection(path, timeout=5) as conn:
        assert conn.call(bus.OBJECT, bus.PROPERTIES, 'Get', 'ss', [bus.MANAGER, 'Version']) == [
            '252.39-1~deb12u2']
    server.join(5)
    uid = str(os.geteuid()).encode().hex().encode()
    assert server.received.startswith(b'\0AUTH EXTERNAL ' + uid + b'\r\nBEGIN\r\n')


def test_an_error_reply_or_a_refusal_is_a_bus_error(tmp_path):
    path = str(tmp_path / 'private')
    server = FakeManager(path, REPLIES['error_no_method'])
    server.start()
    with pytest.raises(bus.BusError, match='UnknownMethod'):
        with bus.Connection(path, timeout=5) as conn:
            conn.call(bus.OBJECT, bus.MANAGER, 'NoSuchMethod')
    server.join(5)
    path2 = str(tmp_path / 'refusing')
    server = FakeManager(path2, b'', auth_answer=b'REJECTED EXTERNAL\r\n')
    server.start()
    with pytest.raises(bus.BusError, match='refused authentication'):
        bus.Connection(path2, timeout=5)
    server.join(5)


def test_a_silent_manager_times_out_as_a_bus_error(tmp_path):
    path = str(tmp_path / 'silent')
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(1)
    try:
        with pytest.raises(bus.BusError):
            bus.Connection(path, timeout=0.3)
    finally:
        server.close()


def test_no_socket_falls_back_to_systemctl(monkeypatch):
    """manager_live and running_user_managers answer from systemctl when the bus cannot."""
    monkeypatch.setattr(bus, 'SYSTEM_SOCKET', '/nonexistent/private')
    calls = []

    def run(args):
        calls.append(args)
        if args[:2] == ['systemctl', 'show']:
            return 0, 'DefaultLimitNOFILE=524288\nDefaultLimitNOFILESoft=1024\n', ''
        return 0, 'user@1001.service loaded active running User Manager for UID 1001\n', ''
    live, error = sdlive.manager_live(run)
    assert error is None and live['nofile'] == sdlive.model.Limit(1024, 524288)
    assert sdlive.running_user_managers(run) == [('user@1001.service', 1001)]
    assert [args[1] for args in calls] == ['show', 'list-units']


def test_deeply_nested_variants_are_refused():
    """A reply of variants nested 100 deep (a user's own socket could send one) is a BusError,
    not a RecursionError."""
    body = b''
    for _level in range(100):
        body += b'\x01v\x00'
    body += b'\x01u\x00' + b'\x00' * (-(len(body) + 3) % 4) + b'\x07\x00\x00\x00'
    fields = b'\x05\x01u\x00\x01\x00\x00\x00\x08\x01g\x00\x01v\x00'
    head = b'l\x02\x00\x01' + struct.pack('<II', len(body), 1) + struct.pack('<I', len(fields))
    data = head + fields + b'\x00' * (-(len(head) + len(fields)) % 8) + body
    with pytest.raises(bus.BusError, match='nested'):
        bus.parse_message(data)
