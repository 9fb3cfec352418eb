// The optional third reference of `npm run bench`: nginx with proxy_cache, one process, in front
// of the same-headers baseline, so every measured request is a cache hit answered by nginx alone.
// Used when an `nginx` binary is found (apt-get install -y nginx-light) unless BENCH_NGINX=0.
import { existsSync } from 'node:fs';

/** The nginx binary to use, or undefined: PATH first, then Debian's /usr/sbin. */
export function findNginx(hasCommand) {
  if (hasCommand('nginx')) return 'nginx';
  return existsSync('/usr/sbin/nginx') ? '/usr/sbin/nginx' : undefined;
}

/**
 * nginx.conf for one process (no master, no daemon) listening on `host:port` and caching every
 * 200 of `origin` for 10 minutes under the request URI. Everything it writes stays under
 * `prefix`. The access log is on and buffered, as ours is; `X-Cache` is replaced by nginx's own
 * cache status so the header count stays the same as ours.
 */
export function nginxConfig({ prefix, host, port, origin }) {
  return `daemon off;
master_process off;
worker_processes 1;
pid ${prefix}/nginx.pid;
error_log ${prefix}/error.log warn;
events { worker_connections 4096; }
http {
  access_log ${prefix}/access.log combined buffer=64k flush=1s;
  server_tokens off;
  keepalive_requests 100000000;
  client_body_temp_path ${prefix}/client_body;
  proxy_temp_path ${prefix}/proxy;
  fastcgi_temp_path ${prefix}/fastcgi;
  uwsgi_temp_path ${prefix}/uwsgi;
  scgi_temp_path ${prefix}/scgi;
  proxy_cache_path ${prefix}/cache levels=1:2 keys_zone=bench:10m max_size=256m inactive=60m use_temp_path=off;
  upstream origin { server ${origin}; keepalive 16; }
  server {
    listen ${host}:${port};
    location / {
      proxy_pass http://origin;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_cache bench;
      proxy_cache_key $request_uri;
      proxy_cache_valid 200 10m;
      proxy_cache_lock on;
      proxy_ignore_headers Cache-Control Expires Set-Cookie;
      proxy_hide_header X-Cache;
      add_header X-Cache $upstream_cache_status always;
    }
  }
}
`;
}
