#!/usr/bin/python3
"""Prints the reply rows of test_msg_text.c as observed from a real memcached.

    python3 tests/unit/protocol/msg_text_observe.py [/usr/bin/memcached]

Not part of the build.  Starts fresh servers on free ports (a plain one,
one with -F and one with -M -m 2), sends each request exactly as
msg_wire_text.fmt writes it, and prints one C row per reply: the op, the
key, the reply bytes, and what the reply says (the result is written here
by hand; value, flags, cas, number and message are read off the reply with
Python's split, independently of the C parser).  A fresh server numbers
cas values from 1, so the rows come out the same on every run.  The 100 KB
value is checked here (header, data, END) and built by the test.
"""
import os
import signal
import socket
import subprocess
import sys
import time

MEMCACHED = sys.argv[1] if len(sys.argv) > 1 else '/usr/bin/memcached'


def start(extra=()):
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]
    s.close()
    p = subprocess.Popen([MEMCACHED, '-l', '127.0.0.1', '-p', str(port), '-U', '0', '-u', 'root',
                          *extra])
    for _ in range(200):
        try:
            return p, socket.create_connection(('127.0.0.1', port))
        except OSError:
            time.sleep(0.02)
    sys.exit('memcached did not start')


def stop(p):
    os.kill(p.pid, signal.SIGTERM)
    p.wait()


def whole(buf):
    """Length of one whole reply at the start of buf, or 0 (read until then)."""
    nl = buf.find(b'\n')
    if nl < 0:
        return 0
    line = buf[:nl - 1] if buf[nl - 1:nl] == b'\r' else buf[:nl]
    if not line.startswith(b'VALUE '):
        return nl + 1
    end = nl + 1 + int(line.split()[3]) + 2
    e2 = buf.find(b'\n', end)
    return e2 + 1 if e2 >= 0 else 0


def rt(c, req):
    c.sendall(req)
    buf = b''
    while not whole(buf):
        d = c.recv(1 << 20)
        if not d:
            sys.exit('connection closed')
        buf += d
    assert whole(buf) == len(buf), buf[:80]
    return buf


def cstr(b):
    out = ''
    for ch in b:
        if ch == 13:
            out += '\\r'
        elif ch == 10:
            out += '\\n'
        elif ch in (34, 92):
            out += '\\' + chr(ch)
        elif 32 <= ch < 127:
            out += chr(ch)
        else:
            out += '\\x%02x' % ch
    return '"' + out + '"'


def row(op, key, req, reply, res):
    """One C row; the fields after res come from the reply itself."""
    text, flags, cas, number = 'NULL', 0, 0, 0
    line = reply.split(b'\r\n', 1)[0]
    if res == 'HIT':
        w = line.split(b' ')
        flags, vlen = int(w[2]), int(w[3])
        cas = int(w[4]) if len(w) > 4 else 0
        start = len(line) + 2
        text = cstr(reply[start:start + vlen])
        assert reply[start + vlen:] == b'\r\nEND\r\n'
    elif res == 'NUMBER':
        number = int(line)
    elif res in ('VERSION', 'ERROR', 'CLIENT_ERROR', 'SERVER_ERROR'):
        text = cstr(line.split(b' ', 1)[1] if b' ' in line else b'')
    if len(req) > 60:
        req = req[:40] + b'...'
    print('    /* %s */' % cstr(req)[1:-1].replace('*/', '*\\/'))
    print('    {MSG_%s, "%s", S(%s), MSG_RES_%s, %s, %du, %du, %du},' %
          (op, key, cstr(reply), res, text, flags, cas, number))


def main():
    p, c = start()
    seq = [
        ('SET', 'k', b'set k 5 0 5\r\nhello\r\n', 'STORED'),
        ('GET', 'k', b'get k\r\n', 'HIT'),
        ('GETS', 'k', b'gets k\r\n', 'HIT'),
        ('GAT', 'k', b'gat 0 k\r\n', 'HIT'),
        ('GATS', 'k', b'gats 0 k\r\n', 'HIT'),
        ('GET', 'miss', b'get miss\r\n', 'MISS'),
        ('GETS', 'miss', b'gets miss\r\n', 'MISS'),
        ('GAT', 'miss', b'gat 100 miss\r\n', 'MISS'),
        ('GATS', 'miss', b'gats -1 miss\r\n', 'MISS'),
        ('SET', 'empty', b'set empty 0 0 0\r\n\r\n', 'STORED'),
        ('GET', 'empty', b'get empty\r\n', 'HIT'),
        ('GATS', 'empty', b'gats 0 empty\r\n', 'HIT'),
        ('SET', 'crlf', b'set crlf 3 0 9\r\nx\r\nEND\r\ny\r\n', 'STORED'),
        ('GET', 'crlf', b'get crlf\r\n', 'HIT'),
        ('GETS', 'crlf', b'gets crlf\r\n', 'HIT'),
        ('GAT', 'crlf', b'gat 0 crlf\r\n', 'HIT'),
        ('SET', 'f', b'set f 4294967295 0 1\r\nx\r\n', 'STORED'),
        ('GETS', 'f', b'gets f\r\n', 'HIT'),
        ('ADD', 'k', b'add k 0 0 1\r\nx\r\n', 'NOT_STORED'),
        ('ADD', 'a', b'add a 0 0 1\r\nx\r\n', 'STORED'),
        ('REPLACE', 'miss', b'replace miss 0 0 1\r\nx\r\n', 'NOT_STORED'),
        ('REPLACE', 'k', b'replace k 0 0 5\r\nhello\r\n', 'STORED'),
        ('APPEND', 'k', b'append k 0 0 1\r\n!\r\n', 'STORED'),
        ('APPEND', 'miss', b'append miss 0 0 1\r\n!\r\n', 'NOT_STORED'),
        ('PREPEND', 'k', b'prepend k 0 0 1\r\n>\r\n', 'STORED'),
        ('PREPEND', 'miss', b'prepend miss 0 0 1\r\n>\r\n', 'NOT_STORED'),
        ('GETS', 'k', b'gets k\r\n', 'HIT'),
    ]
    for op, key, req, res in seq:
        row(op, key, req, rt(c, req), res)
    cas = int(rt(c, b'gets k\r\n').split(b'\r\n')[0].split()[4])
    seq = [
        ('CAS', 'k', b'cas k 0 0 1 %d\r\nx\r\n' % cas, 'STORED'),
        ('CAS', 'k', b'cas k 0 0 1 %d\r\nx\r\n' % cas, 'EXISTS'),
        ('CAS', 'miss', b'cas miss 0 0 1 1\r\nx\r\n', 'NOT_FOUND'),
    ]
    big = b'v' * (2 << 20)
    for op in ('SET', 'ADD', 'REPLACE', 'APPEND', 'PREPEND', 'CAS'):
        seq.append((op, 'big', b'%s big 0 0 %d%s\r\n' % (op.lower().encode(), len(big),
                                                         b' 1' if op == 'CAS' else b'') + big +
                    b'\r\n', 'SERVER_ERROR'))
    seq += [
        ('DELETE', 'k', b'delete k\r\n', 'DELETED'),
        ('DELETE', 'k', b'delete k\r\n', 'NOT_FOUND'),
        ('SET', 'n', b'set n 0 0 2\r\n10\r\n', 'STORED'),
        ('INCR', 'n', b'incr n 5\r\n', 'NUMBER'),
        ('DECR', 'n', b'decr n 20\r\n', 'NUMBER'),
        ('INCR', 'miss', b'incr miss 1\r\n', 'NOT_FOUND'),
        ('DECR', 'miss', b'decr miss 1\r\n', 'NOT_FOUND'),
        ('INCR', 'a', b'incr a 1\r\n', 'CLIENT_ERROR'),
        ('DECR', 'a', b'decr a 1\r\n', 'CLIENT_ERROR'),
        ('SET', 'n', b'set n 0 0 20\r\n18446744073709551614\r\n', 'STORED'),
        ('INCR', 'n', b'incr n 1\r\n', 'NUMBER'),
        ('INCR', 'n', b'incr n 1\r\n', 'NUMBER'),
        ('DECR', 'n', b'decr n 18446744073709551615\r\n', 'NUMBER'),
        ('TOUCH', 'a', b'touch a 100\r\n', 'TOUCHED'),
        ('TOUCH', 'miss', b'touch miss -1\r\n', 'NOT_FOUND'),
        ('VERSION', '', b'version\r\n', 'VERSION'),
        ('FLUSH_ALL', '', b'flush_all\r\n', 'OK'),
        ('FLUSH_ALL', '', b'flush_all -1\r\n', 'OK'),
        ('FLUSH_ALL', '', b'flush_all 10\r\n', 'OK'),
    ]
    for op, key, req, res in seq:
        row(op, key, req, rt(c, req), res)

    # Errors no request fmt writes draws from 1.6.18, observed from the
    # request named in each row's comment; the test offers them to every op.
    print('    /* --- error lines, from requests fmt does not write --- */')
    row('GET', 'k', b'bogus\r\n', rt(c, b'bogus\r\n'), 'ERROR')
    req = b'get ' + b'k' * 251 + b'\r\n'
    row('GET', 'k', req, rt(c, req), 'CLIENT_ERROR')

    # The 100 KB value: the test builds the same bytes.
    val = bytes(ord('a') + i % 26 for i in range(102400))
    rt(c, b'set big100k 7 0 102400\r\n' + val + b'\r\n')
    r = rt(c, b'get big100k\r\n')
    assert r == b'VALUE big100k 7 102400\r\n' + val + b'\r\nEND\r\n'
    print('    /* 100 KB: %s + data + \\r\\nEND\\r\\n as the test builds it */' %
          cstr(r.split(b'\r\n')[0] + b'\r\n'))
    stop(p)

    p, c = start(['-F'])
    row('FLUSH_ALL', '', b'flush_all\r\n', rt(c, b'flush_all\r\n'), 'CLIENT_ERROR')
    stop(p)

    p, c = start(['-M', '-m', '2'])
    for i in range(1000):
        req = b'set key%d 0 0 100000\r\n' % i + b'v' * 100000 + b'\r\n'
        r = rt(c, req)
        if r != b'STORED\r\n':
            row('SET', 'key%d' % i, req, r, 'SERVER_ERROR')
            break
    stop(p)


main()
