# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ask the running systemd managers directly, over their private D-Bus sockets, as systemctl
itself does when it runs as root.

Reading a manager's defaults through ``systemctl show`` costs a process (and, for a user
manager, a ``runuser`` with its PAM stack): about 5 ms of CPU for the system manager and 8 ms
for each user manager, on every run of a module that checks whether a restart is owed. Here
the same method calls go over a socket from the module's own process:

- the system manager listens on ``/run/systemd/private``, each user manager on
  ``/run/user/UID/systemd/private``; both accept root (systemd's bus_check_peercred: the
  peer must be root or the manager's own user);
- ``org.freedesktop.DBus.Properties.GetAll`` of ``org.freedesktop.systemd1.Manager`` gives the
  ``DefaultLimit*`` properties that ``systemctl show`` prints (uint64, UINT64_MAX printed as
  ``infinity``);
- ``org.freedesktop.systemd1.Manager.ListUnitsByPatterns`` (systemd 230 and later) gives the
  units ``systemctl list-units --state=... PATTERN`` lists.

A user's ``/run/user/UID`` belongs to that user, so what its socket answers is as much the
user's word as what ``runuser -u USER systemctl --user show`` got from the user's own bus: it
decides only whether that user's manager is restarted. The reader is bounded (message size,
nesting, a timeout) and raises BusError on anything it cannot take apart.

The wire format is the D-Bus specification's (https://dbus.freedesktop.org/doc/dbus-specification.html):
SASL EXTERNAL authentication, then messages of a fixed header, header fields ``a(yv)``, and a
body marshalled by its signature with natural alignment. Only what these calls need is
written; replies are read for any signature. Every failure (no socket, not root, refused,
an error reply, a malformed message, a timeout) raises BusError, and the callers then ask
systemctl as before.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import socket
import struct

SYSTEM_SOCKET = '/run/systemd/private'
DESTINATION = 'org.freedesktop.systemd1'
OBJECT = '/org/freedesktop/systemd1'
MANAGER = 'org.freedesktop.systemd1.Manager'
PROPERTIES = 'org.freedesktop.DBus.Properties'
UINT64_MAX = 2 ** 64 - 1
TIMEOUT_S = 5.0

# message types and header field codes
_METHOD_CALL, _METHOD_RETURN, _ERROR = 1, 2, 3
_PATH, _INTERFACE, _MEMBER, _ERROR_NAME, _REPLY_SERIAL, _DESTINATION, _SIGNATURE = 1, 2, 3, 4, 5, 6, 8
_MAX_MESSAGE = 16 * 1024 * 1024

_FIXED = {'y': (1, 'B'), 'b': (4, 'I'), 'n': (2, 'h'), 'q': (2, 'H'), 'i': (4, 'i'),
          'u': (4, 'I'), 'x': (8, 'q'), 't': (8, 'Q'), 'd': (8, 'd'), 'h': (4, 'I')}
_ALIGN = dict((code, size) for code, (size, _fmt) in _FIXED.items())
_ALIGN.update({'s': 4, 'o': 4, 'a': 4, 'g': 1, 'v': 1, '(': 8, '{': 8})


class BusError(Exception):
    """The manager could not be asked over its private socket (the caller falls back)."""


def user_socket(uid):
    return '/run/user/%d/systemd/private' % int(uid)


def split_signature(signature):
    """'a{sv}as' -> ['a{sv}', 'as']: the complete types of a signature."""
    types, index = [], 0
    while index < len(signature):
        end = _complete_type(signature, index)
        types.append(signature[index:end])
        index = end
    return types


def _complete_type(signature, index):
    try:
        code = signature[index]
    except IndexError:
        raise BusError('truncated signature %r' % signature)
    if code == 'a':
        return _complete_type(signature, index + 1)
    if code in '({':
        close = ')' if code == '(' else '}'
        index += 1
        while index < len(signature) and signature[index] != close:
            index = _complete_type(signature, index)
        if index >= len(signature):
            raise BusError('unclosed %r in signature %r' % (code, signature))
        return index + 1
    if code in _ALIGN:
        return index + 1
    raise BusError('unknown type %r in signature %r' % (code, signature))


class _Writer:
    """Marshals the few argument types the calls here send (s, o, g, u, as, header fields)."""

    def __init__(self):
        self.data = bytearray()

    def align(self, boundary):
        self.data += b'\0' * (-len(self.data) % boundary)

    def byte(self, value):
        self.data.append(value)

    def uint32(self, value):
        self.align(4)
        self.data += struct.pack('<I', value)

    def string(self, value):
        raw = value.encode('utf-8')
        self.uint32(len(raw))
        self.data += raw + b'\0'

    def signature(self, value):
        raw = value.encode('ascii')
        self.data.append(len(raw))
        self.data += raw + b'\0'

    def value(self, kind, value):
        if kind in ('s', 'o'):
            self.string(value)
        elif kind == 'g':
            self.signature(value)
        elif kind == 'u':
            self.uint32(value)
        elif kind == 'as':
            self.uint32(0)
            start = len(self.data)
            for item in value:
                self.string(item)
            struct.pack_into('<I', self.data, start - 4, len(self.data) - start)
        else:
            raise BusError('cannot send type %r' % kind)


class _Reader:
    """Unmarshals any signature from a whole message (alignment counts from its first byte)."""

    def __init__(self, data, order, position=0):
        self.data = data
        self.order = order
        self.position = position
        self.depth = 0

    def align(self, boundary):
        self.position += -self.position % boundary

    def take(self, size):
        if self.position + size > len(self.data):
            raise BusError('message ends inside a value')
        chunk = self.data[self.position:self.position + size]
        self.position += size
        return chunk

    def read(self, kind):
        # the specification allows 64 levels of containers (32 arrays and 32 structs)
        self.depth += 1
        try:
            if self.depth > 64:
                raise BusError('values nested more than 64 deep')
            return self._read(kind)
        finally:
            self.depth -= 1

    def _read(self, kind):
        code = kind[0]
        if code in _FIXED:
            size, fmt = _FIXED[code]
            self.align(size)
            value = struct.unpack(self.order + fmt, self.take(size))[0]
            return bool(value) if code == 'b' else value
        if code in ('s', 'o'):
            length = self.read('u')
            text = self.take(length + 1)[:-1]
            return text.decode('utf-8', 'replace')
        if code == 'g':
            length = self.read('y')
            return self.take(length + 1)[:-1].decode('ascii', 'replace')
        if code == 'v':
            inner = split_signature(self.read('g'))
            if len(inner) != 1:
                raise BusError('a variant holds %d types' % len(inner))
            return self.read(inner[0])
        if code == 'a':
            return self._array(kind[1:])
        if code in '({':
            self.align(8)
            members = [self.read(member) for member in split_signature(kind[1:-1])]
            return tuple(members)
        raise BusError('cannot read type %r' % kind)

    def _array(self, element):
        length = self.read('u')
        if length > _MAX_MESSAGE:
            raise BusError('array of %d bytes' % length)
        self.align(_ALIGN[element[0]])
        end = self.position + length
        items = []
        while self.position < end:
            items.append(self.read(element))
        if self.position != end:
            raise BusError('array runs past its length')
        if element.startswith('{'):
            return dict(items)
        return items


def method_call(serial, path, interface, member, signature='', args=(), destination=DESTINATION):
    """The bytes of a METHOD_CALL message."""
    body = _Writer()
    for kind, value in zip(split_signature(signature), args):
        body.value(kind, value)
    fields = [(_PATH, 'o', path), (_MEMBER, 's', member)]
    if interface:
        fields.append((_INTERFACE, 's', interface))
    if destination:
        fields.append((_DESTINATION, 's', destination))
    if signature:
        fields.append((_SIGNATURE, 'g', signature))
    head = _Writer()
    head.data += b'l' + bytes(bytearray([_METHOD_CALL, 0, 1]))
    head.data += struct.pack('<II', len(body.data), serial)
    head.uint32(0)
    start = len(head.data)
    for code, kind, value in fields:
        head.align(8)
        head.byte(code)
        head.signature(kind)
        head.value(kind, value)
    struct.pack_into('<I', head.data, start - 4, len(head.data) - start)
    head.align(8)
    return bytes(head.data + body.data)


def parse_message(data):
    """(type, {field code: value}, body values) of one whole message."""
    if len(data) < 16 or data[:1] not in (b'l', b'B'):
        raise BusError('not a D-Bus message')
    order = '<' if data[:1] == b'l' else '>'
    kind = bytearray(data[1:2])[0]
    reader = _Reader(data, order, 12)
    fields = dict(reader.read('a(yv)'))
    reader.align(8)
    body_length = struct.unpack(order + 'I', data[4:8])[0]
    if reader.position + body_length != len(data):
        raise BusError('body length does not match the message')
    values = [reader.read(part) for part in split_signature(fields.get(_SIGNATURE, ''))]
    return kind, fields, values


def message_length(head):
    """The whole length of a message from its first 16 bytes."""
    order = '<' if head[:1] == b'l' else '>'
    body_length, _serial, fields_length = struct.unpack(order + 'III', head[4:16])
    header = 16 + fields_length
    total = header + (-header % 8) + body_length
    if total > _MAX_MESSAGE:
        raise BusError('message of %d bytes' % total)
    return total


class Connection:
    """One authenticated connection to a manager's private socket."""

    def __init__(self, path, timeout=TIMEOUT_S):
        self.serial = 0
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.sock.settimeout(timeout)
            self.sock.connect(path)
            # BEGIN goes with AUTH, as systemctl pipelines its handshake: systemd (252 at least)
            # does not answer a call whose BEGIN came in a write of its own after the OK.
            uid = str(os.geteuid()).encode('ascii')
            self.sock.sendall(b'\0AUTH EXTERNAL ' + uid.hex().encode('ascii') + b'\r\nBEGIN\r\n')
            line = self._line()
            if not line.startswith(b'OK '):
                raise BusError('%s refused authentication: %r' % (path, line))
        except (OSError, socket.timeout) as exc:
            self.close()
            raise BusError('%s: %s' % (path, exc))
        except BusError:
            self.close()
            raise

    def _line(self):
        data = b''
        while not data.endswith(b'\r\n'):
            chunk = self.sock.recv(1)
            if not chunk or len(data) > 4096:
                raise BusError('the authentication answer ended early: %r' % data)
            data += chunk
        return data

    def _recv(self, size):
        data = b''
        while len(data) < size:
            chunk = self.sock.recv(size - len(data))
            if not chunk:
                raise BusError('the manager closed the connection')
            data += chunk
        return data

    def call(self, path, interface, member, signature='', args=()):
        """The reply's body values; BusError for an error reply."""
        self.serial += 1
        try:
            self.sock.sendall(method_call(self.serial, path, interface, member, signature, args))
            while True:
                head = self._recv(16)
                data = head + self._recv(message_length(head) - 16)
                kind, fields, values = parse_message(data)
                if fields.get(_REPLY_SERIAL) != self.serial:
                    continue
                if kind == _ERROR:
                    raise BusError('%s.%s: %s %s' % (interface, member, fields.get(_ERROR_NAME),
                                                     values[0] if values else ''))
                if kind != _METHOD_RETURN:
                    raise BusError('unexpected message type %d' % kind)
                return values
        except (OSError, socket.timeout) as exc:
            raise BusError('%s.%s: %s' % (interface, member, exc))
        except (ValueError, KeyError, IndexError, TypeError, struct.error) as exc:
            # a reply this reader cannot take apart: the caller asks systemctl instead
            raise BusError('%s.%s: unreadable reply: %s' % (interface, member, exc))

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()


def manager_socket(uid=None):
    """The private socket of the system manager (uid None) or of ``uid``'s user manager;
    BusError unless this process is root and the socket is there."""
    if os.geteuid() != 0:
        raise BusError('only root may use the managers\' private sockets')
    path = SYSTEM_SOCKET if uid is None else user_socket(uid)
    if not os.path.exists(path):
        raise BusError('%s is missing' % path)
    return path


def show_value(value):
    """A property value as ``systemctl show`` prints it (rlimits: UINT64_MAX is infinity)."""
    if isinstance(value, bool):
        return 'yes' if value else 'no'
    if isinstance(value, int) and value == UINT64_MAX:
        return 'infinity'
    if isinstance(value, list):
        return ' '.join(str(item) for item in value)
    return str(value)


def manager_properties(names, uid=None):
    """{name: value as systemctl show prints it} of the manager's ``names`` that it has."""
    with Connection(manager_socket(uid)) as bus:
        values = bus.call(OBJECT, PROPERTIES, 'GetAll', 's', [MANAGER])
    if len(values) != 1 or not isinstance(values[0], dict):
        raise BusError('GetAll did not answer a{sv}')
    found = values[0]
    return dict((name, show_value(found[name])) for name in names if name in found)


def units_by_patterns(states, patterns, uid=None):
    """[(unit name, active state, sub state)] of the manager's units matching ``patterns`` in
    one of ``states`` (load, active or sub states, as systemctl list-units --state)."""
    with Connection(manager_socket(uid)) as bus:
        values = bus.call(OBJECT, MANAGER, 'ListUnitsByPatterns', 'asas',
                          [list(states), list(patterns)])
    if len(values) != 1 or not isinstance(values[0], list):
        raise BusError('ListUnitsByPatterns did not answer an array')
    return [(unit[0], unit[3], unit[4]) for unit in values[0]]
