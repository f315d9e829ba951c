-- docs/relocate.md: the tables the page moves, shop.orders (the page's
-- first example shows its place after it moved to lab_btrfs) and
-- public.orders, each with a primary key and the index orders_placed.
CREATE SCHEMA shop;
CREATE TABLE shop.orders (id bigint PRIMARY KEY, placed timestamptz NOT NULL, note text);
CREATE INDEX orders_placed ON shop.orders (placed);
INSERT INTO shop.orders SELECT g, '2026-01-01'::timestamptz + g * interval '1 minute', 'order ' || g
  FROM generate_series(1, 20000) g;
CREATE TABLE public.orders (LIKE shop.orders INCLUDING ALL);
INSERT INTO public.orders SELECT * FROM shop.orders;
