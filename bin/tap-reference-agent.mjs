#!/usr/bin/env node
import '../dist/bin/tap-reference-agent/main.js';
