#!/usr/bin/env node
import '../dist/reference/tapctl/main.js';
