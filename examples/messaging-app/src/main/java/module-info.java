/** An example Conduit application: two processes exchange messages and a region. */
module org.example.conduit.app {
    requires dev.conduit;
}
