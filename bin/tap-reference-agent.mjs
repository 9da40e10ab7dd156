#!/usr/bin/env node
import '../dist/reference/agents/reference-agent.js';
