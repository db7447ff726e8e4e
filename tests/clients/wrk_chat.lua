-- wrk script: POST a short chat completion (model id from TACHYON_MODEL) and
-- print latency percentiles at the end.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"model": "' .. (os.getenv("TACHYON_MODEL") or "incident-analyst") ..
           '", "messages": [{"role": "user", "content": "Checkout fails with 502s. Find the root cause."}],' ..
           ' "temperature": 0, "max_tokens": 8}'

done = function(summary, latency, requests)
  io.write(string.format("summary: requests=%d duration_s=%.2f req_per_s=%.1f p50_ms=%.2f p90_ms=%.2f p99_ms=%.2f max_ms=%.2f errors=%d non2xx=%d\n",
    summary.requests, summary.duration / 1e6, summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(90) / 1000, latency:percentile(99) / 1000, latency.max / 1000,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout, summary.errors.status))
end
