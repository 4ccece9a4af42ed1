"""A TCP proxy in front of a real Redis that can swallow the server's replies.

With `replies_lost = True`, commands still reach Redis and run there, but their answers
never come back: the client times out on a call that Redis applied. This is the fault an
"exactly once" promise has to survive (a network blip, a frozen proxy), made repeatable.
"""

import socket
import threading


class ReplyDroppingProxy:
    def __init__(self, target_port: int, host: str = "127.0.0.1"):
        self.target = (host, target_port)
        self.listener = socket.create_server((host, 0))
        self.port = self.listener.getsockname()[1]
        self.url = f"redis://{host}:{self.port}/0"
        self.replies_lost = False
        self._sockets: list[socket.socket] = []
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self._closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.target)
            self._sockets += [client, server]
            threading.Thread(target=self._pump, args=(client, server, False), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, True), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, replies: bool):
        try:
            while data := source.recv(65536):
                if replies and self.replies_lost:
                    continue
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self):
        self._closed = True
        self.listener.close()
        for s in self._sockets:
            s.close()
