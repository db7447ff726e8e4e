#!/usr/bin/python3
# A tiny MCP server over Streamable HTTP for the client tests. Prints its
# port on the first line of stdout, then serves until killed. echo answers
# with application/json; slow answers with an event stream (progress
# notifications, then the result); expire makes the next request of the
# session get 404 (the session is forgotten). The last request's headers are
# kept and returned by the tool "headers".
import json, sys, threading, time, uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sessions = set()
forget = set()
state = {"headers": {}, "deletes": 0}

TOOLS = [
    {"name": "echo", "description": "Echo.", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}},
    {"name": "slow", "description": "Progress over SSE.", "inputSchema": {"type": "object", "properties": {"steps": {"type": "integer"}}}},
    {"name": "expire", "description": "Forget the session.", "inputSchema": {"type": "object"}},
    {"name": "headers", "description": "The request's headers.", "inputSchema": {"type": "object"}},
]

class handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply_json(self, obj, extra=None):
        body = json.dumps(obj).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def do_DELETE(self):
        sessions.discard(self.headers.get("MCP-Session-Id"))
        state["deletes"] += 1
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        req = json.loads(self.rfile.read(n))
        sid = self.headers.get("MCP-Session-Id")
        state["headers"] = {k: v for k, v in self.headers.items()}
        method = req.get("method")
        if method == "initialize":
            sid = str(uuid.uuid4())
            sessions.add(sid)
            return self.reply_json({"jsonrpc": "2.0", "id": req["id"], "result": {"protocolVersion": "2025-11-25",
                                    "capabilities": {"tools": {}}, "serverInfo": {"name": "fake-http", "version": "1"}}},
                                   {"MCP-Session-Id": sid})
        if sid not in sessions or sid in forget:
            forget.discard(sid)
            sessions.discard(sid)
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if "id" not in req:
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if method == "tools/list":
            return self.reply_json({"jsonrpc": "2.0", "id": req["id"], "result": {"tools": TOOLS}})
        if method == "ping":
            return self.reply_json({"jsonrpc": "2.0", "id": req["id"], "result": {}})
        p = req["params"]
        name, args = p["name"], p.get("arguments", {})
        if name == "echo":
            return self.reply_json({"jsonrpc": "2.0", "id": req["id"], "result": {"content": [{"type": "text", "text": args.get("text", "")}]}})
        if name == "expire":
            forget.add(sid)
            return self.reply_json({"jsonrpc": "2.0", "id": req["id"], "result": {"content": [{"type": "text", "text": "forgotten"}]}})
        if name == "headers":
            h = state["headers"]
            text = "auth=%s x=%s version=%s deletes=%d" % (h.get("Authorization"), h.get("X-Team"), h.get("MCP-Protocol-Version"), state["deletes"])
            if h.get("traceparent"):
                text += " traceparent=%s" % h.get("traceparent")
            return self.reply_json({"jsonrpc": "2.0", "id": req["id"], "result": {"content": [{"type": "text", "text": text}]}})
        # slow: an event stream
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        def chunk(data):
            b = data.encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(b), b))
            self.wfile.flush()
        token = p.get("_meta", {}).get("progressToken")
        steps = args.get("steps", 3)
        chunk(": a comment\n\n")
        for i in range(steps):
            time.sleep(0.1)
            chunk("event: message\ndata: " + json.dumps({"jsonrpc": "2.0", "method": "notifications/progress",
                  "params": {"progressToken": token, "progress": i + 1, "total": steps}}) + "\n\n")
        chunk("data: " + json.dumps({"jsonrpc": "2.0", "id": req["id"], "result": {"content": [{"type": "text", "text": "streamed %d" % steps}]}}) + "\n\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
server.daemon_threads = True
print(server.server_address[1], flush=True)
server.serve_forever()
