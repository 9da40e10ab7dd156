#!/usr/bin/env node
import { runBundled } from './bundled.mjs';
await runBundled('reference/agents/reference-agent.ts');
