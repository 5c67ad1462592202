// Kiln console build: plain Preact with esbuild's JSX transform (no Babel plugin), relative
// asset paths so kilnd can serve dist/ at "/", everything bundled (works offline).
import { defineConfig } from 'vite';

export default defineConfig({
  base: './',
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2020',
    sourcemap: true,
    reportCompressedSize: false,
  },
  server: {
    // `npm run dev` against a local kilnd: KILN_URL=http://127.0.0.1:8080 npm run dev
    proxy: { '/api': process.env.KILN_URL || 'http://127.0.0.1:8080' },
  },
});
