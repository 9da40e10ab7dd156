#!/usr/bin/env node
import { importBuilt } from './built.mjs';

await importBuilt('tapctl', '../dist/reference/tapctl/main.js');
