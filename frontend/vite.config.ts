import { defineConfig } from 'vite'
import { svelte } from '@sveltejs/vite-plugin-svelte'

// base './' so the same build works at / on loopback and inside the Wails window.
export default defineConfig({
  plugins: [svelte()],
  base: './',
  build: { outDir: 'dist', emptyOutDir: false, sourcemap: false, chunkSizeWarningLimit: 400 },
})
