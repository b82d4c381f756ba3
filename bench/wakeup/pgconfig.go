package main

import "github.com/jackc/pgx/v5"

func mustConfig(url string) *pgx.ConnConfig {
	c, err := pgx.ParseConfig(url)
	check(err)
	return c
}
