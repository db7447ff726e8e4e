#!/usr/bin/python3
# A tiny MCP server over stdio for the client tests. Its behaviour is chosen
# by argv[1]:
#   normal    echo, add (structured content), slow (progress), fail (isError),
#             boom (JSON-RPC error), grow (adds a tool and says the list changed),
#             paged tools/list, readOnlyHint on echo, a $ref in add's schema
#   hang      answers initialize, then never answers again
#   garbage   writes lines that are not JSON-RPC, then answers normally
#   wrong_id  answers every tools/call with an id nobody asked for
#   die       exits at the first tools/call
#   version   answers initialize with a protocol version nobody speaks
#   ignore_eof  keeps running after its stdin closes (ignores SIGTERM too)
#   env       echo answers with the value of $MCP_TEST and the cwd
import json, os, signal, sys, time

mode = sys.argv[1] if len(sys.argv) > 1 else "normal"
extra_tool = False

def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()

def tools():
    t = [
        {"name": "echo", "description": "Echo the text back.",
         "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
         "annotations": {"readOnlyHint": True}},
        {"name": "add", "description": "Add two numbers.",
         "inputSchema": {"type": "object", "$defs": {"num": {"type": "number"}},
                         "properties": {"a": {"$ref": "#/$defs/num"}, "b": {"$ref": "#/$defs/num"}}, "required": ["a", "b"]},
         "outputSchema": {"type": "object", "properties": {"sum": {"type": "number"}}, "required": ["sum"]}},
        {"name": "slow", "description": "Reports progress, then answers.",
         "inputSchema": {"type": "object", "properties": {"steps": {"type": "integer"}, "ms": {"type": "integer"}}}},
        {"name": "fail", "description": "Always fails.", "inputSchema": {"type": "object"}},
        {"name": "boom", "description": "A protocol error.", "inputSchema": {"type": "object"}},
        {"name": "grow", "description": "Adds a tool.", "inputSchema": {"type": "object"}},
        {"name": "bad_add", "description": "structuredContent against its schema.", "inputSchema": {"type": "object"},
         "outputSchema": {"type": "object", "properties": {"sum": {"type": "number"}}, "required": ["sum"]}},
        {"name": "big", "description": "A long text.", "inputSchema": {"type": "object"}},
    ]
    if extra_tool:
        t.append({"name": "extra", "description": "Added later.", "inputSchema": {"type": "object"}})
    return t

def text(s):
    return {"content": [{"type": "text", "text": s}]}

def call(req):
    global extra_tool
    p = req.get("params", {})
    name, args = p.get("name"), p.get("arguments", {})
    token = p.get("_meta", {}).get("progressToken")
    if mode == "die":
        sys.exit(3)
    if mode == "wrong_id":
        return send({"jsonrpc": "2.0", "id": 999999, "result": text("lost")})
    if name == "echo":
        if args.get("text") == "_meta":  # what the request carried in params._meta
            return send({"jsonrpc": "2.0", "id": req["id"], "result": text(json.dumps(p.get("_meta", {}), sort_keys=True))})
        if mode == "env":
            return send({"jsonrpc": "2.0", "id": req["id"], "result": text(os.environ.get("MCP_TEST", "") + "|" + os.getcwd())})
        return send({"jsonrpc": "2.0", "id": req["id"], "result": text(args.get("text", ""))})
    if name == "add":
        s = args["a"] + args["b"]
        return send({"jsonrpc": "2.0", "id": req["id"], "result": {"content": [{"type": "text", "text": json.dumps({"sum": s})}],
                                                                  "structuredContent": {"sum": s}}})
    if name == "bad_add":
        return send({"jsonrpc": "2.0", "id": req["id"], "result": {"content": [], "structuredContent": {"sum": "three"}}})
    if name == "slow":
        steps, ms = args.get("steps", 3), args.get("ms", 100)
        for i in range(steps):
            time.sleep(ms / 1000.0)
            if token is not None:
                send({"jsonrpc": "2.0", "method": "notifications/progress",
                      "params": {"progressToken": token, "progress": i + 1, "total": steps, "message": "step %d" % (i + 1)}})
        return send({"jsonrpc": "2.0", "id": req["id"], "result": text("done after %d steps" % steps)})
    if name == "fail":
        return send({"jsonrpc": "2.0", "id": req["id"], "result": {"content": [{"type": "text", "text": "no such order"}], "isError": True}})
    if name == "boom":
        return send({"jsonrpc": "2.0", "id": req["id"], "error": {"code": -32602, "message": "unknown argument"}})
    if name == "grow":
        extra_tool = True
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        return send({"jsonrpc": "2.0", "id": req["id"], "result": text("grown")})
    if name == "big":
        return send({"jsonrpc": "2.0", "id": req["id"], "result": text("x" * 100000)})
    return send({"jsonrpc": "2.0", "id": req["id"], "result": text("extra called")})

if mode == "ignore_eof":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)

initialized = False
for line in sys.stdin:
    line = line.strip()
    if not line:
        continue
    req = json.loads(line)
    method = req.get("method")
    sys.stderr.write("got " + str(method) + "\n")
    sys.stderr.flush()
    if "id" not in req:
        continue  # notifications
    if method == "initialize":
        version = "1999-01-01" if mode == "version" else "2025-06-18"
        if mode == "garbage":
            sys.stdout.write("this is not json\n[1,2,3]\n{\"jsonrpc\":\"1.0\"}\n")
        send({"jsonrpc": "2.0", "id": req["id"], "result": {"protocolVersion": version, "capabilities": {"tools": {"listChanged": True}},
                                                           "serverInfo": {"name": "fake", "version": "1"}}})
        continue
    if mode == "hang":
        continue
    if method == "ping":
        send({"jsonrpc": "2.0", "id": req["id"], "result": {}})
    elif method == "tools/list":
        all_tools = tools()
        cursor = req.get("params", {}).get("cursor")
        if cursor is None:
            send({"jsonrpc": "2.0", "id": req["id"], "result": {"tools": all_tools[:3], "nextCursor": "page2"}})
        else:
            send({"jsonrpc": "2.0", "id": req["id"], "result": {"tools": all_tools[3:]}})
    elif method == "tools/call":
        call(req)
    else:
        send({"jsonrpc": "2.0", "id": req["id"], "error": {"code": -32601, "message": "no such method"}})

if mode == "ignore_eof":
    while True:
        time.sleep(1)
