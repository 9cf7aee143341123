"""A TCP forwarder on 127.0.0.1 between one client (a replica, an elector)
and kubesim, with four modes, so a test can cut that client off without
touching kubesim:

    p = Proxy(ks.port)          # p.port: where the client connects
    p.set_mode("blackhole")     # connections go silent, new ones hang
    p.set_mode("refuse")        # everything closed, new connections dropped
    p.set_mode("pass")          # healed (the silent connections are closed)
    p.set_mode("freeze")        # the open connections go silent and stay
                                # open, new ones pass (a NAT entry or a load
                                # balancer's flow dropped)
    p.close()

The upstream is a port on 127.0.0.1, or the path of a Unix socket.
"""
import selectors
import socket
import threading
import time


class Proxy:
    """A TCP forwarder on 127.0.0.1 with four modes: pass, blackhole, refuse, freeze."""

    def __init__(self, upstream_port):
        self.upstream_port = upstream_port
        self.mode = "pass"
        self.lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(256)
        self.lsock.setblocking(False)
        self.port = self.lsock.getsockname()[1]
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.lsock, selectors.EVENT_READ, None)
        self.wake_r, self.wake_w = socket.socketpair()
        self.wake_r.setblocking(False)
        self.sel.register(self.wake_r, selectors.EVENT_READ, "wake")
        self.peer = {}      # socket -> its peer socket (None: blackholed)
        self.clients = set()
        self.lock = threading.Lock()
        self.pending = []   # mode changes for the loop thread
        self.running = True
        self.connections = 0
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def set_mode(self, mode, upstream_port=None):
        assert mode in ("pass", "blackhole", "refuse", "freeze")
        with self.lock:
            self.pending.append((mode, upstream_port))
        self.wake_w.send(b"x")
        # Wait until the loop applied it, so the caller can timestamp it.
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            with self.lock:
                if not self.pending:
                    return
            time.sleep(0.001)

    def close(self):
        self.running = False
        self.wake_w.send(b"x")
        self.thread.join(5)
        for s in list(self.peer):
            self._drop(s)
        self.lsock.close()

    def _drop(self, s):
        self.clients.discard(s)
        p = self.peer.pop(s, None)
        try:
            self.sel.unregister(s)
        except (KeyError, ValueError):
            pass
        s.close()
        if p is not None and p in self.peer:
            self._drop(p)

    def _apply(self, mode, port):
        if port is not None:
            self.upstream_port = port
        if mode == self.mode:
            return
        old, self.mode = self.mode, mode
        if mode == "refuse" or old == "blackhole":
            # Down: every connection goes. Healed from a blackhole: the
            # silent connections are dead, close them as a router would not
            # but a real client eventually notices.
            for s in list(self.peer):
                self._drop(s)
        elif mode in ("blackhole", "freeze"):
            # Silence: keep the client sockets, cut the upstream ones.
            for c in [x for x in self.peer if x in self.clients]:
                up = self.peer.get(c)
                if up is not None:
                    self.peer[c] = None
                    self.peer.pop(up, None)
                    try:
                        self.sel.unregister(up)
                    except (KeyError, ValueError):
                        pass
                    up.close()

    def _loop(self):
        while self.running:
            for key, _ in self.sel.select(0.5):
                if key.data == "wake":
                    try:
                        self.wake_r.recv(4096)
                    except BlockingIOError:
                        pass
                    with self.lock:
                        todo, self.pending = self.pending, []
                    for mode, port in todo:
                        self._apply(mode, port)
                    continue
                s = key.fileobj
                if s is self.lsock:
                    self._accept()
                    continue
                self._forward(s)
        for s in list(self.peer):
            self._drop(s)

    def _accept(self):
        try:
            c, _ = self.lsock.accept()
        except BlockingIOError:
            return
        if self.mode == "refuse":
            c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            c.close()
            return
        self.connections += 1
        self.clients.add(c)
        if self.mode == "blackhole":
            self.peer[c] = None
            self.sel.register(c, selectors.EVENT_READ, "client")
            return
        try:
            if isinstance(self.upstream_port, str):
                up = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                up.settimeout(2)
                up.connect(self.upstream_port)
            else:
                up = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=2)
        except OSError:
            c.close()
            return
        up.setblocking(False)
        c.setblocking(False)
        self.peer[c] = up
        self.peer[up] = c
        self.sel.register(c, selectors.EVENT_READ, "client")
        self.sel.register(up, selectors.EVENT_READ, "upstream")

    def _forward(self, s):
        try:
            data = s.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._drop(s)
            return
        p = self.peer.get(s)
        if p is None:
            return  # blackholed: the bytes vanish
        try:
            p.setblocking(True)
            p.sendall(data)
            p.setblocking(False)
        except OSError:
            self._drop(s)
