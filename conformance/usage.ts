/** The text of tap-conform --help: its forms, its options with their defaults, its environment and exit codes. */
import { PROFILES } from './case.ts';
import { DEFAULT_JWT_SCOPE, DEFAULT_RUNS, DEFAULT_SEED, DEFAULT_TIMEOUT_MS, HARNESS_SIGNED_ID, LONGEST_LEASE_MS } from './options.ts';

export const USAGE = `Usage:
  tap-conform [options] <agent-executable>          spawn the agent and speak TAP over stdio
  tap-conform [options] -- <command> [args…]         spawn a command (e.g. -- python3 agent.py)
  tap-conform [options] ws://host:port/path          connect over WebSocket
  tap-conform [options] ws://host:port/path -- <command> [args…]
  tap-conform [options] nats://host:port/<agent_id>  connect through a NATS server
                                                     both bindings of one agent, one combined report
  tap-conform [options] --workspace <dir> -- <command> [args…]
                                                     the workspace binding (see below)
  tap-conform --list [--profile p] [--only glob]     print the cases

Only a run of the whole suite certifies; --profile, --level, --only and --skip focus a run on
some cases, reported as "Focused run: N of M cases — a certification needs the whole suite".

Options:
  --profile <name>        run only this profile (repeatable): ${PROFILES.join(', ')}
  --level must|should|may run cases up to this level (default may: everything, judged strictly)
  --only <id-glob>        run only matching cases (repeatable; * and ? wildcards)
  --skip <id-glob>        leave matching cases out (repeatable; * and ? wildcards)
  --seed <n>              seed of the random choices (default ${DEFAULT_SEED})
  --path <p>              replay path of a property or chaos failure (with --seed and --only)
  --runs <n>              runs per property (default ${DEFAULT_RUNS})
  --repeat <n>            run each case n times; a case passes only if every run does (flaky ones are marked)
  --timeout <ms>          how long each step waits for a reply (default ${DEFAULT_TIMEOUT_MS})
  --time-scale <x>        stretch every timing tolerance by x (slow machines, CI)
  --wait <seconds>        how long to wait for a WebSocket or NATS agent started just before to
                          accept connections (default 20; 0 fails at once)
  --jobs <n>              cases run at once (default 8; 4 over stdio on one core); over WebSocket
                          and NATS a case also waits until its tasks fit the agent card's limits
  --json <file>           write the JSON report
  --junit <file>          write a JUnit XML report
  --html <file>           write a self-contained HTML report
  --markdown <file>       write a Markdown report (summary table, then each failure) for an issue or pull request
  --spec-base-url <url>   where report links to spec sections and requirement ids point
                          (default: the spec site the package ships, relative to the report file)
  --badge <file>          write an SVG badge with the level reached ("partial" for a focused run)
  --expected-failures <file>  a JSON baseline [{ "id", "reason" }] of known failures
  --transcripts <dir>     write every case's wire transcript as NDJSON
  --hmac-key-id <id>      WebSocket and NATS agents: the key id the agent was started with
  --hmac-key <base64url>  WebSocket and NATS agents: the pre-shared key (at least 32 bytes)
  --hmac-peer <id>        WebSocket and NATS agents: the requester id the key is bound to
                          (default ${HARNESS_SIGNED_ID}); without these three options the key
                          is read from TAP_HMAC_KEY_ID, TAP_HMAC_KEY and TAP_HMAC_PEER
  --registry <nats-url>   the NATS server of the mesh registry the agent joined: adds the registry
                          profile (its entry, heartbeats, load and withdrawal; spec: registry)
  --agent-pid <pid>       with --registry: the agent's process id; the last registry case sends it
                          SIGTERM and watches its entry go (without it that case is skipped)
  --agent-command <cmd>   with --registry: a shell command that starts another process of the agent
                          (same agent id, same registry); one registry case runs it while the
                          agent is in the mesh and checks that it refuses to join and says the id is
                          taken, leaving the live entry alone (without it that case is skipped)
  --signing-key <file>    NATS agents whose durable runners hold a trust file: the Ed25519 key of a
                          principal in it (tapctl nats permissions writes them). The harness signs
                          the records it publishes, and the signed-records cases run
                          (spec: bindings-nats#signed-records); without it they are UNIMPLEMENTED
  --tls-ca <file>         wss:// and NATS agents: the authorities (PEM) to trust for the agent's or
                          the server's certificate
  --tls-cert <file>       a client certificate (PEM) to present, with --tls-key <file> its key; every
                          connection presents the first. Give a second pair for another principal:
                          the cases that need two principals use it (spec: security#client-certificates)
  --jwt-key <file>        the token issuer's private key (PEM or JWK): every session presents a
                          bearer JWT signed with it, and the security profile's token cases run;
                          with --jwt-issuer <iss> and --jwt-audience <aud> (the agent's)
  --jwt-scope <scopes>    the scopes of those tokens, space-separated (default ${DEFAULT_JWT_SCOPE})
  --registry-trust <file> with --registry: the trust file that binds the agent id to its signing
                          key ({"principals": {"<agent id>": {"public_key": "…"}}}); the agent's
                          entry must then be signed (spec: registry#signatures)
  --no-color              plain output (also when NO_COLOR is set)
  --debug                 stack traces and harness internals
  --version, --help

NATS agents (nats://host:port/<agent_id>):
  The nats-durable profile applies when the agent serves durable queues of the conformance
  capabilities on the server; otherwise it is UNIMPLEMENTED. Its lease case runs a task of 2.5
  leases (the queue consumer's ack_wait) and waits out leases up to ${LONGEST_LEASE_MS / 1000} s; a longer lease
  leaves it NOT-TESTED. A run stops (exit 3) when two processes answer for the agent id.

In the agent's command:
  {state}                 replaced by a fresh folder per case, for agents that keep state across
                          a restart: tap-conform -- ./my-agent --state-dir {state}

Environment given to a stdio agent (spec: conformance#key-provisioning):
  TAP_CONFORMANCE=1       offer the conformance capabilities tap.test.*; an agent built on
                          tap-agent-protocol does so when it is set. Start a WebSocket or NATS
                          agent with it yourself.
  TAP_HMAC_KEY_ID, TAP_HMAC_KEY, TAP_HMAC_PEER
                          a fresh pre-shared key (base64url, 32 bytes) for the integrity cases,
                          bound to the requester id TAP_HMAC_PEER (${HARNESS_SIGNED_ID}). Start a
                          WebSocket or NATS agent with three of your own (the peer
                          ${HARNESS_SIGNED_ID}) and run tap-conform with the same three set, or
                          pass them as --hmac-*

Exit codes: 0 every required case passed; 1 the agent failed a case; 2 usage error;
3 the harness could not run (the agent would not start, the URL is unreachable, or two processes
answer for a NATS agent id).`;
