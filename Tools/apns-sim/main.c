/* Placeholder until the APNs simulator is written. */
int main(void) { return 1; }
