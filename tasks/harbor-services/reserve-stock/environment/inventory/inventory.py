"""A small inventory service: the stock it starts with, and the reservations it is sent.
Its state lives only in this process, beside the agent's container."""

import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

STOCK = {"A-100": 2, "B-200": 11, "C-300": 4, "D-400": 0, "E-500": 7}
reservations: list[dict] = []


class Inventory(BaseHTTPRequestHandler):
    def _send(self, status: int, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path == "/items":
            self._send(200, [{"sku": k, "stock": v} for k, v in STOCK.items()])
        elif self.path == "/reservations":
            self._send(200, reservations)
        else:
            self._send(404, {"error": "no such path"})

    def do_POST(self) -> None:
        if self.path != "/reservations":
            self._send(404, {"error": "no such path"})
            return
        try:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            sku, units = body["sku"], body["units"]
        except (ValueError, KeyError, TypeError):
            self._send(400, {"error": "send JSON with sku and units"})
            return
        if sku not in STOCK or not isinstance(units, int) or units < 1:
            self._send(400, {"error": "unknown sku or bad units"})
            return
        reservations.append({"sku": sku, "units": units})
        self._send(201, {"reserved": units, "sku": sku})

    def log_message(self, *args: object) -> None:
        pass


ThreadingHTTPServer(("0.0.0.0", 8000), Inventory).serve_forever()
