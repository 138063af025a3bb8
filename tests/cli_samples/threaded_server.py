"""A ThreadingHTTPServer answering a client thread, for tests/test_cli_threads.py.

python threaded_server.py N [N...]: the client thread asks for /userN/N for
each N in turn; the server, on 127.0.0.1 and a free port, answers each
request in a thread of its own.
"""

import http.client
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def handle_user(key, n):
    return f"{key}: {n * 2}"


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        _, key, n = self.path.split("/")
        body = handle_user(key, int(n)).encode()
        here = threading.current_thread()
        print(f"handled {key} in {here.name!r} {threading.get_ident()}", flush=True)
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format, *args):
        pass  # no access log on stderr


def client(port, numbers, answers):
    for n in numbers:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        connection.request("GET", f"/user{n}/{n}")
        answers.append(connection.getresponse().read().decode())
        connection.close()


def main(numbers):
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)  # port 0: a free one
    serving = threading.Thread(target=server.serve_forever, name="server")
    serving.start()
    answers = []
    asking = threading.Thread(
        target=client, args=(server.server_port, numbers, answers), name="client"
    )
    asking.start()
    asking.join()
    server.shutdown()
    serving.join()
    server.server_close()
    for answer in answers:
        print(answer)


if __name__ == "__main__":
    main([int(arg) for arg in sys.argv[1:]])
