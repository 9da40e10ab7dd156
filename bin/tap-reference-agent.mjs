#!/usr/bin/env node
import { importBuilt } from './built.mjs';

await importBuilt('tap-reference-agent', '../dist/bin/tap-reference-agent/main.js');
