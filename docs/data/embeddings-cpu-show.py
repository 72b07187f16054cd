import sys
from llmbench.store.store import Store
for r in sorted(Store(sys.argv[1]).records(), key=lambda r: r.workload.get("concurrency") or 0):
    m, s = r.metrics, r.serving
    e = m["e2e_s"]
    print(f"c={r.workload.get('concurrency')} ok={s['requests']-s['errors_total']}/{s['requests']} "
          f"req/s={m['request_throughput_req_s'].mean:.3f} inputs/s={m['input_throughput_inputs_per_s'].mean:.3f} "
          f"input tok/s={m['input_throughput_tok_s'].mean:.1f} e2e p50/p90/p99 s={e.p50:.3f}/{e.p90:.3f}/{e.p99:.3f} "
          f"prompt parity={s['token_parity']['prompt_tokens_usage_ratio']} validity={s['validity']} "
          f"ttft_s in metrics={'ttft_s' in m} contended={r.env.get('contention',{}).get('contended')}")
