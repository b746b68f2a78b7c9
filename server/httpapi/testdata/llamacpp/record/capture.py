import http.server, json, sys, os, itertools
out = sys.argv[2]
n = itertools.count()
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get('Content-Length', 0)))
        i = next(n)
        with open(os.path.join(out, '%02d.json' % i), 'wb') as f:
            f.write(body)
        with open(os.path.join(out, '%02d.headers' % i), 'w') as f:
            f.write(self.path + '\n' + str(self.headers))
        resp = json.dumps({"content": "2 * math.pi * r\n", "timings/prompt_n": 10, "timings/prompt_ms": 12, "timings/prompt_per_token_ms": 1, "timings/prompt_per_second": 800, "timings/predicted_n": 8, "timings/predicted_ms": 40, "timings/predicted_per_token_ms": 5, "timings/predicted_per_second": 200, "truncated": False, "tokens_cached": 18}, separators=(',', ':')).encode()
        self.send_response(200)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(resp)))
        self.end_headers()
        self.wfile.write(resp)
    def log_message(self, *a): pass
http.server.HTTPServer(('127.0.0.1', int(sys.argv[1])), H).serve_forever()
