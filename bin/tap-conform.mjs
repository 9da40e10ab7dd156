#!/usr/bin/env node
import { importBuilt } from './built.mjs';

await (await importBuilt('tap-conform', '../dist/bin/tap-conform/main.js')).runProgram();
